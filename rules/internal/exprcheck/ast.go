package exprcheck

import (
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
)

// Visit calls fn for e and every expression below it, depth first; fn returns false to
// stop the walk. Visit returns false when fn stopped it.
func Visit(e celast.Expr, fn func(celast.Expr) bool) bool {
	if e == nil {
		return true
	}
	if !fn(e) {
		return false
	}
	for _, sub := range SubExprs(e) {
		if !Visit(sub, fn) {
			return false
		}
	}
	return true
}

// SubExprs lists the direct sub-expressions of e.
func SubExprs(e celast.Expr) []celast.Expr {
	switch e.Kind() {
	case celast.SelectKind:
		return []celast.Expr{e.AsSelect().Operand()}
	case celast.CallKind:
		call := e.AsCall()
		if call.IsMemberFunction() {
			return append([]celast.Expr{call.Target()}, call.Args()...)
		}
		return call.Args()
	case celast.ListKind:
		return e.AsList().Elements()
	case celast.MapKind:
		var out []celast.Expr
		for _, entry := range e.AsMap().Entries() {
			me := entry.AsMapEntry()
			out = append(out, me.Key(), me.Value())
		}
		return out
	case celast.StructKind:
		var out []celast.Expr
		for _, f := range e.AsStruct().Fields() {
			out = append(out, f.AsStructField().Value())
		}
		return out
	case celast.ComprehensionKind:
		comp := e.AsComprehension()
		return []celast.Expr{comp.IterRange(), comp.AccuInit(), comp.LoopCondition(), comp.LoopStep(), comp.Result()}
	}
	return nil
}

// LiteralString returns the value of a string literal expression.
func LiteralString(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// VarAccess reports whether e reads one entry of the map variable name (children,
// refs) and, if the entry's key is a constant, which.
func VarAccess(e celast.Expr, name string) (key string, isRead, constant bool) {
	isVar := func(x celast.Expr) bool {
		return x.Kind() == celast.IdentKind && x.AsIdent() == name
	}
	switch e.Kind() {
	case celast.SelectKind:
		sel := e.AsSelect()
		if isVar(sel.Operand()) {
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
		if call.IsMemberFunction() || len(args) != 2 || !isVar(args[0]) {
			return "", false, false
		}
		if s, ok := LiteralString(args[1]); ok {
			return s, true, true
		}
		return "", true, false
	}
	return "", false, false
}
