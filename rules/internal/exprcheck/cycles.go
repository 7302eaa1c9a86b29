package exprcheck

import (
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
)

// Cycles returns every elementary cycle of reads (id -> the ids it reads) found by a
// depth-first walk, each as a path that starts and ends with the same id (a -> b -> a),
// rotated to start at the id that comes first in ids. Each cycle is reported once; ids
// not in ids are ignored.
func Cycles(ids []string, reads map[string][]string) [][]string {
	pos := make(map[string]int, len(ids))
	for i, id := range ids {
		pos[id] = i
	}
	const (
		unvisited = iota
		active
		done
	)
	state := make(map[string]int, len(ids))
	var stack []string
	var cycles [][]string
	seen := map[string]bool{}
	var dfs func(id string)
	dfs = func(id string) {
		state[id] = active
		stack = append(stack, id)
		for _, dep := range reads[id] {
			if _, known := pos[dep]; !known {
				continue
			}
			switch state[dep] {
			case unvisited:
				dfs(dep)
			case active:
				start := slices.Index(stack, dep)
				cycle := rotateCycle(slices.Clone(stack[start:]), pos)
				key := strings.Join(cycle, " ")
				if !seen[key] {
					seen[key] = true
					cycles = append(cycles, append(cycle, cycle[0]))
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[id] = done
	}
	for _, id := range ids {
		if state[id] == unvisited {
			dfs(id)
		}
	}
	return cycles
}

// rotateCycle rotates a cycle to start at its member that comes first in the file.
func rotateCycle(cycle []string, pos map[string]int) []string {
	first := 0
	for i, id := range cycle {
		if pos[id] < pos[cycle[first]] {
			first = i
		}
	}
	return append(cycle[first:], cycle[:first]...)
}

// MaxRange is the largest count lists.range accepts.
const MaxRange = 10_000

// UnboundedRanges returns the IDs of the lists.range calls of checked whose count is not
// a constant of at most MaxRange. The function allocates its whole list before CEL can
// count the cost, so a count read from the parent would let whoever writes the parent
// exhaust the controller's memory.
func UnboundedRanges(checked *cel.Ast) []int64 {
	var out []int64
	Visit(checked.NativeRep().Expr(), func(e celast.Expr) bool {
		if e.Kind() != celast.CallKind || e.AsCall().FunctionName() != "lists.range" {
			return true
		}
		args := e.AsCall().Args()
		if len(args) == 1 && args[0].Kind() == celast.LiteralKind {
			if n, isInt := args[0].AsLiteral().(types.Int); isInt && n <= MaxRange {
				return true
			}
		}
		out = append(out, e.ID())
		return true
	})
	return out
}
