package tree

import (
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/kubecel/kubecel/rules/internal/celjson"
)

// Host runs the expressions of a tree for Fill and keeps their failures.
type Host[P Program] interface {
	// Eval runs p with vars; ok is false when it failed, and the Host recorded why.
	Eval(p P, vars *Activation, at int) (out ref.Val, ok bool)
	// Fail records that the value of p could not be used: err says why. p is the zero
	// P for a problem that no single expression caused.
	Fail(p P, at int, err error)
}

// Fill evaluates template trees for one set of variables.
type Fill[P Program] struct {
	Host Host[P]
	// Vars holds the variables; what the values build is charged to Vars.Bytes.
	Vars *Activation
	// At is the forEach index, -1 for a plain child or a status field; it is passed on
	// to the Host.
	At int
	// Batched holds the values of the tree's expressions when a Batch computed them at
	// once (by their slot), or is nil to evaluate each expression.
	Batched traits.Lister
}

// Value evaluates a tree. present is false for an expression that returned an empty
// optional, which leaves its field out; ok is false when something failed (the Host
// recorded it).
func (f *Fill[P]) Value(n *Node[P]) (v any, present, ok bool) {
	switch n.Kind {
	case Const:
		return n.Value, true, true
	case Map:
		m := make(map[string]any, len(n.Keys))
		ok = true
		for i, k := range n.Keys {
			v, present, okv := f.Value(n.Elems[i])
			if present {
				m[k] = v
			}
			ok = ok && okv
		}
		return m, true, ok
	case List:
		l := make([]any, 0, len(n.Elems))
		ok = true
		for _, e := range n.Elems {
			v, present, okv := f.Value(e)
			if present {
				l = append(l, v)
			}
			ok = ok && okv
		}
		return l, true, ok
	case Expr:
		out, ok := f.eval(n.Prog, n.slot)
		if !ok {
			return nil, false, false
		}
		if opt, isOpt := out.(*types.Optional); isOpt && !n.Exact {
			if !opt.HasValue() {
				return nil, false, true
			}
			out = opt.GetValue()
		}
		v, err := celjson.ToJSON(out, f.Vars.Bytes)
		if err != nil {
			f.Host.Fail(n.Prog, f.At, err)
			return nil, false, false
		}
		return v, true, true
	case Text:
		return f.text(n)
	}
	return nil, false, false
}

// text evaluates a string with text around its ${...} parts: each part's text first,
// then the whole string, once the budget holds it.
func (f *Fill[P]) text(n *Node[P]) (v any, present, ok bool) {
	var buf [8]string
	texts := buf[:0]
	size := 0
	for _, part := range n.Parts {
		s := part.Text
		if part.IsExpr {
			out, ok := f.eval(part.Prog, part.slot)
			if !ok {
				return nil, false, false
			}
			var err error
			if s, err = celjson.ToText(out); err != nil {
				f.Host.Fail(part.Prog, f.At, err)
				return nil, false, false
			}
		}
		texts = append(texts, s)
		size += len(s)
	}
	if err := f.Vars.Bytes.Charge(int64(size), "the interpolated string"); err != nil {
		// Every part is in the same field: any names it.
		var p P
		for _, part := range n.Parts {
			if part.IsExpr {
				p = part.Prog
			}
		}
		f.Host.Fail(p, f.At, err)
		return nil, false, false
	}
	return strings.Join(texts, ""), true, true
}

// eval takes an expression's value from the batched values, or has the Host evaluate
// it.
func (f *Fill[P]) eval(p P, slot int32) (ref.Val, bool) {
	if f.Batched != nil {
		return f.Batched.Get(types.Int(slot)), true
	}
	return f.Host.Eval(p, f.Vars, f.At)
}
