package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"

	"github.com/kubecel/kubecel/rules/internal/celenv"
	"github.com/kubecel/kubecel/rules/internal/parse"
	"github.com/kubecel/kubecel/rules/internal/template"
)

// This file finds which children an expression reads, by walking its checked AST, and
// orders a rule's children so that each comes after the children it reads.

// childReads returns the ids of the children that the checked expression reads through
// `children.X`, `children.?X`, `children["X"]` or `children[?"X"]`. Any other use of
// `children` (a computed index, iterating it, passing it whole) is an error, because the
// dependency could not be known before evaluation. The second result is false when
// errors were reported.
func (c *compiler) childReads(w where, source, src string, off int, checked *cel.Ast) ([]string, bool) {
	native := checked.NativeRep()
	info := native.SourceInfo()
	var reads []string
	ok := true
	report := func(e celast.Expr, msg string) {
		ok = false
		c.fail(w, source, columnOf(source, off, runeOffset(src, info.GetStartLocation(e.ID()))), msg)
	}
	found := func(e celast.Expr, id string) {
		if !slices.Contains(c.childIDs, id) {
			report(e, fmt.Sprintf("unknown child '%s'%s", id, parse.DidYouMean(id, c.childIDs)))
			return
		}
		if !slices.Contains(reads, id) {
			reads = append(reads, id)
		}
	}
	var walk func(e celast.Expr, shadowed bool)
	walk = func(e celast.Expr, shadowed bool) {
		if e == nil {
			return
		}
		if !shadowed {
			if id, isRead, constant := childAccess(e); isRead {
				if !constant {
					report(e, `children must be indexed with a constant child id, e.g. children["web"]`)
				} else {
					found(e, id)
				}
				// The operand is `children` itself; walk only an index expression.
				if e.Kind() == celast.CallKind && !constant {
					walk(e.AsCall().Args()[1], shadowed)
				}
				return
			}
			if e.Kind() == celast.IdentKind && e.AsIdent() == celenv.Children {
				report(e, "read children as children.<id> (or children.?<id>): the child read must be known before evaluation")
				return
			}
		}
		if e.Kind() == celast.ComprehensionKind {
			comp := e.AsComprehension()
			walk(comp.IterRange(), shadowed)
			walk(comp.AccuInit(), shadowed)
			inner := shadowed || comp.AccuVar() == celenv.Children
			inLoop := inner || comp.IterVar() == celenv.Children || (comp.HasIterVar2() && comp.IterVar2() == celenv.Children)
			walk(comp.LoopCondition(), inLoop)
			walk(comp.LoopStep(), inLoop)
			walk(comp.Result(), inner)
			return
		}
		for _, sub := range subExprs(e) {
			walk(sub, shadowed)
		}
	}
	walk(native.Expr(), false)
	return reads, ok
}

// childAccess reports whether e reads one child from `children` and, if the child id is
// a constant, which.
func childAccess(e celast.Expr) (id string, isRead, constant bool) {
	return varAccess(e, celenv.Children)
}

// varAccess reports whether e reads one entry of the map variable name (children,
// refs) and, if the entry's key is a constant, which.
func varAccess(e celast.Expr, name string) (id string, isRead, constant bool) {
	isChildren := func(x celast.Expr) bool {
		return x.Kind() == celast.IdentKind && x.AsIdent() == name
	}
	switch e.Kind() {
	case celast.SelectKind:
		sel := e.AsSelect()
		if isChildren(sel.Operand()) {
			return sel.FieldName(), true, true
		}
	case celast.CallKind:
		call := e.AsCall()
		args := call.Args()
		switch call.FunctionName() {
		case "_[_]", "_[?_]", "_?._":
		default:
			return "", false, false
		}
		if call.IsMemberFunction() || len(args) != 2 || !isChildren(args[0]) {
			return "", false, false
		}
		if s, ok := template.LiteralString(args[1]); ok {
			return s, true, true
		}
		return "", true, false
	}
	return "", false, false
}

// orderChildren sorts children so that each comes after every child it reads, keeping
// file order otherwise. It reports each dependency cycle and returns nil if there is
// one.
func (c *compiler) orderChildren(rule string, ruleAt path, children []*Child, reads map[string][]string) []*Child {
	ids := make([]string, len(children))
	byID := make(map[string]*Child, len(children))
	for i, ch := range children {
		ids[i] = ch.ID
		byID[ch.ID] = ch
	}
	order, cycles := orderIDs(ids, reads)
	for _, cycle := range cycles {
		*c.errs = append(*c.errs, &Error{
			Rule: rule, Child: cycle[0], Field: "",
			Message: "dependency cycle: " + strings.Join(cycle, " -> ") + "; a child cannot read, directly or not, a child that reads it",
			path:    string(ruleAt.Key("children")),
		})
	}
	if len(cycles) > 0 {
		return nil
	}
	ordered := make([]*Child, len(order))
	for i, id := range order {
		ordered[i] = byID[id]
	}
	for _, ch := range ordered {
		for i, other := range ordered {
			if slices.Contains(reads[ch.ID], other.ID) {
				ch.DependsOn = append(ch.DependsOn, other.ID)
				ch.depIndex = append(ch.depIndex, i)
			}
		}
	}
	return ordered
}

// findCycles returns every elementary cycle found by a depth-first walk, each as a path
// that starts and ends with the same id (a -> b -> a), rotated to start at the id that
// comes first in ids. Each cycle is reported once.
func findCycles(ids []string, reads map[string][]string) [][]string {
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
