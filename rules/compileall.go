package rules

import (
	"runtime"
	"sync"
)

// compiled is what compileRule made of one source: the rule, nil when it cannot be
// compiled, and the problems it reported.
type compiled struct {
	rule *Rule
	errs ErrorList
}

// parallelFrom is the number of rules from which a load compiles them on several
// goroutines: below it, starting them costs more than it saves.
const parallelFrom = 8

// compileAll compiles every source, on up to GOMAXPROCS goroutines, and returns the
// results in the order of sources, so that the problems a load reports keep the order of
// the file whatever order the rules were compiled in. Compiling reads only opts and the
// source; what rules share (the CEL library, the embedded schemas, the CRD schemas, and
// the types, environments and programs of share.go) is immutable or locked.
//
// A source whose rule reuse may take over takes it over (reuse.go) instead.
func compileAll(sources []*ruleSource, pieces []piece, opts Options, reuse reusable) []compiled {
	out := make([]compiled, len(sources))
	sh := newShare()
	var todo []int
	for i, src := range sources {
		if r := reuse.take(src, pieces[src.piece], opts); r != nil {
			out[i].rule = r
			continue
		}
		todo = append(todo, i)
	}
	one := func(i int) {
		if r := compileRule(sources[i], opts, sh, &out[i].errs); r != nil {
			r.reuseKey = reuseKey(sources[i], pieces[sources[i].piece])
			r.kinds = kindDeps(r, opts)
			out[i].rule = r
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(todo))
	if len(todo) < parallelFrom || workers < 2 {
		for _, i := range todo {
			one(i)
		}
		return out
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				one(i)
			}
		})
	}
	for _, i := range todo {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}
