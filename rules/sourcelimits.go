package rules

import "fmt"

// Limits on one source of rules (a file, a ConfigMap key: one Document). Every rule
// costs memory and start-up time in the controller; a source that whoever may write it
// (a team's ConfigMap gathered by a label selector) can make arbitrarily large would let
// one writer exhaust the controller for everyone. A source over a limit is an error of
// that source, reported before anything in it is compiled, and the last good rules keep
// running.
const (
	// DefaultMaxRulesPerSource is the number of rules one source may hold.
	DefaultMaxRulesPerSource = 1000
	// DefaultMaxSourceBytes is the size one source may have: twice what a ConfigMap can
	// hold, so that only a file reaches it.
	DefaultMaxSourceBytes = 2 << 20
)

func (o Options) maxRulesPerSource() int {
	if o.MaxRulesPerSource <= 0 {
		return DefaultMaxRulesPerSource
	}
	return o.MaxRulesPerSource
}

func (o Options) maxSourceBytes() int {
	if o.MaxSourceBytes <= 0 {
		return DefaultMaxSourceBytes
	}
	return o.MaxSourceBytes
}

// oversized reports the documents over the size limit, and returns the others.
func oversized(docs []Document, opts Options, errs *ErrorList) []Document {
	limit := opts.maxSourceBytes()
	kept := docs[:0:0]
	for _, d := range docs {
		if len(d.Data) > limit {
			*errs = append(*errs, &Error{Source: d.Source, Message: fmt.Sprintf("%d bytes, over the limit of %d per source of rules (--max-source-bytes): split the rules over several sources", len(d.Data), limit)})
			continue
		}
		kept = append(kept, d)
	}
	return kept
}

// tooManyRules reports the sources that hold more rules than the limit, and returns the
// rules of the others.
func tooManyRules(sources []*ruleSource, pieces []piece, opts Options, errs *ErrorList) []*ruleSource {
	limit := opts.maxRulesPerSource()
	count := map[string]int{}
	for _, r := range sources {
		count[pieces[r.piece].source]++
	}
	kept := sources[:0:0]
	reported := map[string]bool{}
	for _, r := range sources {
		src := pieces[r.piece].source
		if count[src] <= limit {
			kept = append(kept, r)
			continue
		}
		if !reported[src] {
			reported[src] = true
			*errs = append(*errs, &Error{Source: src, Message: fmt.Sprintf("%d rules, over the limit of %d per source of rules (--max-rules-per-source): split them over several sources", count[src], limit)})
		}
	}
	return kept
}
