package rules

import (
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// This file evaluates compiled template nodes into JSON-like values, and holds the CEL
// activation that expressions read their variables from.

// value evaluates a template node. present is false for an expression that returned an
// empty optional, which leaves its field out; ok is false when something failed.
// results holds the values of the node's batch, or is nil to evaluate one by one.
func (ev *evaluation) value(n *node, vars *activation, at int, results traits.Lister) (v any, present, ok bool) {
	switch n.kind {
	case constNode:
		return n.value, true, true
	case mapNode:
		m := make(map[string]any, len(n.keys))
		ok = true
		for i, k := range n.keys {
			v, present, okv := ev.value(n.elems[i], vars, at, results)
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
			v, present, okv := ev.value(e, vars, at, results)
			if present {
				l = append(l, v)
			}
			ok = ok && okv
		}
		return l, true, ok
	case exprNode:
		out, ok := ev.evalIn(n.prog, vars, at, results)
		if !ok {
			return nil, false, false
		}
		if opt, isOpt := out.(*types.Optional); isOpt && !n.exact {
			if !opt.HasValue() {
				return nil, false, true
			}
			out = opt.GetValue()
		}
		v, err := toJSON(out)
		if err != nil {
			ev.fail(n.prog, at, err)
			return nil, false, false
		}
		return v, true, true
	case textNode:
		var b strings.Builder
		for _, part := range n.parts {
			if part.prog == nil {
				b.WriteString(part.text)
				continue
			}
			out, ok := ev.evalIn(part.prog, vars, at, results)
			if !ok {
				return nil, false, false
			}
			s, err := toText(out)
			if err != nil {
				ev.fail(part.prog, at, err)
				return nil, false, false
			}
			b.WriteString(s)
		}
		return b.String(), true, true
	}
	return nil, false, false
}

// evalIn takes an expression's value from its batch's results, or evaluates it.
func (ev *evaluation) evalIn(p *program, vars *activation, at int, results traits.Lister) (ref.Val, bool) {
	if results != nil {
		return results.Get(types.Int(p.slot)), true
	}
	return ev.eval(p, vars, at)
}

// activation resolves the CEL variables of one expression.
type activation struct {
	parent, children, refs, self, each ref.Val
	index                              ref.Val
}

// ResolveName implements interpreter.Activation.
func (a *activation) ResolveName(name string) (any, bool) {
	var v ref.Val
	switch name {
	case varParent:
		v = a.parent
	case varChildren:
		v = a.children
	case varRefs:
		v = a.refs
	case varSelf:
		v = a.self
	case varEach:
		v = a.each
	case varIndex:
		v = a.index
	}
	return v, v != nil
}

// Parent implements interpreter.Activation.
func (a *activation) Parent() interpreter.Activation { return nil }
