package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"

	"github.com/kubecel/kubecel/rules/internal/celenv"
	"github.com/kubecel/kubecel/rules/internal/exprcheck"
	"github.com/kubecel/kubecel/rules/internal/parse"
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
		c.fail(w, source, exprcheck.Column(source, off, exprcheck.RuneOffset(src, info.GetStartLocation(e.ID()))), msg)
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
		for _, sub := range exprcheck.SubExprs(e) {
			walk(sub, shadowed)
		}
	}
	walk(native.Expr(), false)
	return reads, ok
}

// childAccess reports whether e reads one child from `children` and, if the child id is
// a constant, which.
func childAccess(e celast.Expr) (id string, isRead, constant bool) {
	return exprcheck.VarAccess(e, celenv.Children)
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
