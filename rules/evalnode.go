package rules

import (
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"

	"github.com/kubecel/kubecel/rules/internal/celbudget"
	"github.com/kubecel/kubecel/rules/internal/celenv"
	"github.com/kubecel/kubecel/rules/internal/celjson"
)

// This file evaluates compiled template nodes into JSON-like values, and holds the CEL
// activation that expressions read their variables from.

// fill evaluates one template node tree for one set of variables.
type fill struct {
	ev   *evaluation
	vars *activation
	// at is the forEach index, -1 for a plain child or a status field.
	at int
	// batched holds the values of the tree's expressions when fastPath computed them at
	// once (by their slot), or is nil to evaluate each expression.
	batched traits.Lister
}

// value evaluates a template node. present is false for an expression that returned an
// empty optional, which leaves its field out; ok is false when something failed.
func (f *fill) value(n *node) (v any, present, ok bool) {
	switch n.kind {
	case constNode:
		return n.value, true, true
	case mapNode:
		m := make(map[string]any, len(n.keys))
		ok = true
		for i, k := range n.keys {
			v, present, okv := f.value(n.elems[i])
			if present {
				m[k] = v
			}
			ok = ok && okv
		}
		return m, true, ok
	case listNode:
		l := make([]any, 0, len(n.elems))
		ok = true
		for _, e := range n.elems {
			v, present, okv := f.value(e)
			if present {
				l = append(l, v)
			}
			ok = ok && okv
		}
		return l, true, ok
	case exprNode:
		out, ok := f.eval(n.prog)
		if !ok {
			return nil, false, false
		}
		if opt, isOpt := out.(*types.Optional); isOpt && !n.exact {
			if !opt.HasValue() {
				return nil, false, true
			}
			out = opt.GetValue()
		}
		v, err := celjson.ToJSON(out, f.ev.budget)
		if err != nil {
			f.ev.fail(n.prog, f.at, err)
			return nil, false, false
		}
		return v, true, true
	case textNode:
		return f.text(n)
	}
	return nil, false, false
}

// text evaluates a string with text around its ${...} parts: each part's text first,
// then the whole string, once the budget holds it.
func (f *fill) text(n *node) (v any, present, ok bool) {
	var buf [8]string
	texts := buf[:0]
	size := 0
	for _, part := range n.parts {
		s := part.text
		if part.prog != nil {
			out, ok := f.eval(part.prog)
			if !ok {
				return nil, false, false
			}
			var err error
			if s, err = celjson.ToText(out); err != nil {
				f.ev.fail(part.prog, f.at, err)
				return nil, false, false
			}
		}
		texts = append(texts, s)
		size += len(s)
	}
	if err := f.ev.budget.Charge(int64(size), "the interpolated string"); err != nil {
		// Every part is in the same field: any names it.
		var p *program
		for _, part := range n.parts {
			if part.prog != nil {
				p = part.prog
			}
		}
		f.ev.fail(p, f.at, err)
		return nil, false, false
	}
	return strings.Join(texts, ""), true, true
}

// eval takes an expression's value from the batched values, or evaluates it.
func (f *fill) eval(p *program) (ref.Val, bool) {
	if f.batched != nil {
		return f.batched.Get(types.Int(p.slot)), true
	}
	return f.ev.eval(p, f.vars, f.at)
}

// activation resolves the CEL variables of one expression.
type activation struct {
	parent, children, refs, self, each ref.Val
	index                              ref.Val
	// parents is rollout.healthy's.
	parents ref.Val
	// budget is the evaluation's byte budget (budget.go).
	budget *celbudget.Budget
}

// Budget implements celbudget.Holder.
func (a *activation) Budget() *celbudget.Budget { return a.budget }

// ResolveName implements interpreter.Activation.
func (a *activation) ResolveName(name string) (any, bool) {
	var v ref.Val
	switch name {
	case celenv.Parent:
		v = a.parent
	case celenv.Children:
		v = a.children
	case celenv.Refs:
		v = a.refs
	case celenv.Self:
		v = a.self
	case celenv.Each:
		v = a.each
	case celenv.Index:
		v = a.index
	case celenv.Parents:
		v = a.parents
	}
	return v, v != nil
}

// Parent implements interpreter.Activation.
func (a *activation) Parent() interpreter.Activation { return nil }
