package template

import (
	"sort"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/parser"

	"github.com/kubecel/kubecel/rules/internal/exprcheck"
	"github.com/kubecel/kubecel/rules/internal/parse"
	"github.com/kubecel/kubecel/rules/internal/tree"
)

// An expr child is usually one map literal, {"apiVersion": ..., "metadata": {...}}. CEL
// would build it as a map of CEL values on every evaluation, to be converted to Go
// values after. FromLiteral instead splits the literal along its constant keys into a
// tree whose leaves are the entry values, compiled on their own and evaluated in one
// batch: the same result for a fraction of the work. It is an optimisation only;
// anything it does not handle keeps the whole expression.

// Leaf compiles the CEL text of one entry value found at w; ok is false when it cannot
// be compiled on its own.
type Leaf[P tree.Program] func(src string, w parse.Where) (p P, ok bool)

// FromLiteral splits the map literal e (with its source info) found at w into a tree,
// compiling the entry values that are not literals themselves with leaf. ok is false
// when e is not a map literal with constant string keys, each once, and values that
// compile.
func FromLiteral[P tree.Program](e celast.Expr, info *celast.SourceInfo, w parse.Where, leaf Leaf[P]) (*tree.Node[P], bool) {
	n, ok := literalNode(e, info, w, leaf)
	if !ok || n.Kind != tree.Map {
		return nil, false
	}
	return n, true
}

// literalNode splits a map or list literal; any other expression becomes a leaf.
func literalNode[P tree.Program](e celast.Expr, info *celast.SourceInfo, w parse.Where, leaf Leaf[P]) (*tree.Node[P], bool) {
	switch e.Kind() {
	case celast.MapKind:
		entries := e.AsMap().Entries()
		byKey := make(map[string]*tree.Node[P], len(entries))
		for _, entry := range entries {
			me := entry.AsMapEntry()
			key, isString := exprcheck.LiteralString(me.Key())
			if !isString || me.IsOptional() || byKey[key] != nil {
				return nil, false
			}
			v, ok := literalNode(me.Value(), info, w.Key(key), leaf)
			if !ok {
				return nil, false
			}
			byKey[key] = v
		}
		n := &tree.Node[P]{Kind: tree.Map}
		for key := range byKey {
			n.Keys = append(n.Keys, key)
		}
		sort.Strings(n.Keys)
		for _, key := range n.Keys {
			n.Elems = append(n.Elems, byKey[key])
		}
		return n, true
	case celast.ListKind:
		list := e.AsList()
		if len(list.OptionalIndices()) > 0 {
			return nil, false
		}
		n := &tree.Node[P]{Kind: tree.List}
		for i, item := range list.Elements() {
			v, ok := literalNode(item, info, w.Index(i), leaf)
			if !ok {
				return nil, false
			}
			n.Elems = append(n.Elems, v)
		}
		return n, true
	case celast.LiteralKind:
		switch v := e.AsLiteral().(type) {
		case types.String:
			return &tree.Node[P]{Kind: tree.Const, Value: string(v)}, true
		case types.Int:
			return &tree.Node[P]{Kind: tree.Const, Value: int64(v)}, true
		case types.Bool:
			return &tree.Node[P]{Kind: tree.Const, Value: bool(v)}, true
		case types.Null:
			return &tree.Node[P]{Kind: tree.Const, Value: nil}, true
		}
	}
	src, err := parser.Unparse(e, info)
	if err != nil {
		return nil, false
	}
	p, ok := leaf(src, w)
	if !ok {
		return nil, false
	}
	return &tree.Node[P]{Kind: tree.Expr, Prog: p, Exact: true}, true
}
