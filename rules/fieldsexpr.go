package rules

import (
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"

	"github.com/kubecel/kubecel/rules/internal/exprcheck"
)

// This file checks the object a CEL expression builds against the schema of its kind,
// where the expression builds it as literals: the object of an expr child, and the value
// of a whole-string ${} in a template. A map literal's keys are fields, checked as a
// template's are (package kindschema); its values are checked the same way when they are
// map or list literals, else by their static type. Both branches of a conditional are checked.
// Anything else (a map read from the parent, a comprehension) has no static fields, and
// only its type is checked.

// checkExprFields checks what the program p builds against vs, reporting each problem at
// its column; off is the byte offset of p's CEL in its field's text. It returns whether
// the object was built as literals all the way to its fields, so that they were checked.
func (c *compiler) checkExprFields(p *program, off int, vs valueSchema) bool {
	if p == nil || p.checked == nil || vs.Schema == nil && !vs.Resource {
		return false
	}
	native := p.checked.NativeRep()
	x := exprChecker{c: c, p: p, off: off, native: native}
	root := native.Expr()
	if !literalObject(root) {
		// A computed value: only its type can be checked, as the field's.
		if msg := vs.TypeMismatch(p.out); msg != "" {
			c.fail(p.w, p.source, 0, msg)
		}
		return false
	}
	x.value(root, vs)
	return true
}

// literalObject reports whether e builds a map as a literal, possibly under conditionals.
func literalObject(e ast.Expr) bool {
	switch e.Kind() {
	case ast.MapKind:
		return true
	case ast.CallKind:
		call := e.AsCall()
		if call.FunctionName() == operators.Conditional && len(call.Args()) == 3 {
			return literalObject(call.Args()[1]) && literalObject(call.Args()[2])
		}
	}
	return false
}

// exprChecker walks the literals of one expression.
type exprChecker struct {
	c      *compiler
	p      *program
	off    int
	native *ast.AST
}

// value checks the value e placed at vs.
func (x *exprChecker) value(e ast.Expr, vs valueSchema) {
	if vs.Schema == nil && !vs.Resource {
		return
	}
	if msg := vs.TypeMismatch(x.native.GetType(e.ID())); msg != "" {
		x.fail(e, msg)
		return
	}
	switch e.Kind() {
	case ast.MapKind:
		for _, entry := range e.AsMap().Entries() {
			me := entry.AsMapEntry()
			key, ok := exprcheck.LiteralString(me.Key())
			if !ok {
				continue // a computed key: any field
			}
			if msg := vs.UnknownField(key); msg != "" {
				x.fail(me.Key(), msg)
				continue
			}
			x.value(me.Value(), vs.Key(key))
		}
	case ast.ListKind:
		for i, item := range e.AsList().Elements() {
			x.value(item, vs.Item(i))
		}
	case ast.CallKind:
		call := e.AsCall()
		if call.FunctionName() == operators.Conditional && len(call.Args()) == 3 {
			x.value(call.Args()[1], vs)
			x.value(call.Args()[2], vs)
		}
	}
}

// fail reports msg at the column where e starts.
func (x *exprChecker) fail(e ast.Expr, msg string) {
	loc := x.native.SourceInfo().GetStartLocation(e.ID())
	x.c.fail(x.p.w, x.p.source, exprcheck.Column(x.p.source, x.off, exprcheck.RuneOffset(x.p.src, loc)), msg)
}
