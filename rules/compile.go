package rules

import (
	"fmt"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"

	"github.com/kubecel/kubecel/rules/internal/celbudget"
	"github.com/kubecel/kubecel/rules/internal/celenv"
)

// This file compiles one CEL expression: parse, type-check, check the result type, find
// the children it reads, estimate its cost and build the program. Every problem becomes
// an *Error that names the place and the column.

// program is one compiled CEL expression. It is immutable and safe for concurrent use.
type program struct {
	// w locates the field the expression is in.
	w where
	// source is the field's text, shown in errors: a whole template string, or the CEL.
	source string
	// src is the CEL text itself.
	src string
	prg cel.Program
	out *cel.Type
	// reads lists the ids of the children the expression reads; refReads those of the
	// refs.
	reads, refReads []string
	// checked is the type-checked AST, kept for static analysis at load time.
	checked *cel.Ast
	// sensitive is true when the expression reads Secret data (sensitive.go): its
	// errors' texts are withheld.
	sensitive bool
}

// Program implements tree.Program.
func (p *program) Program() cel.Program { return p.prg }

// CEL implements tree.Program.
func (p *program) CEL() string { return p.src }

// want is the kind of value an expression must produce.
type want int

const (
	wantAny want = iota
	wantBool
	wantList
	wantMap
	wantText // interpolated into a string
)

func (w want) String() string {
	switch w {
	case wantBool:
		return "a bool"
	case wantList:
		return "a list"
	case wantMap:
		return "a map"
	case wantText:
		return "a string, number or bool"
	}
	return "a value"
}

// compiler compiles the expressions of one rule.
type compiler struct {
	envs *celenv.Envs
	errs *ErrorList
	// clusterParent is true when the rule's parent resource is known to be
	// cluster-scoped.
	clusterParent bool
	// childIDs are the ids of the rule's children, for resolving children.X; refIDs
	// those of its refs, for refs.X.
	childIDs, refIDs []string
	cost             celbudget.Costs
	// progs records every program compiled, so that a child's reads can be collected.
	progs []*program
	// warnings are what loads but deserves a second look (Rule.warnings).
	warnings []*Error
}

// compile compiles src, the CEL found at byte offset off of the field text source (0
// when the whole field is CEL), in env.
func (c *compiler) compile(env *cel.Env, w where, source, src string, off int, wanted want) *program {
	parsed, iss := env.Parse(src)
	if iss.Err() != nil {
		c.issues(w, source, src, off, iss, nil, nil)
		return nil
	}
	checked, iss := env.Check(parsed)
	if iss.Err() != nil {
		c.issues(w, source, src, off, iss, env, parsed)
		return nil
	}
	p := &program{w: w, source: source, src: src, out: checked.OutputType(), checked: checked}
	if msg := mismatch(p.out, wanted); msg != "" {
		c.fail(w, source, columnOf(source, off, 0), msg)
		return nil
	}
	var ok bool
	if p.reads, ok = c.childReads(w, source, src, off, checked); !ok {
		return nil
	}
	if p.refReads, ok = c.refReads(w, source, src, off, checked); !ok {
		return nil
	}
	if !c.checkRanges(w, source, src, off, checked) {
		return nil
	}
	if why := c.cost.Check(env, checked); why != "" {
		c.fail(w, source, 0, why)
		return nil
	}
	prg, err := env.Program(checked, c.cost.ProgramOptions(env, checked)...)
	if err != nil {
		c.fail(w, source, 0, "cannot build the program: "+err.Error())
		return nil
	}
	p.prg = prg
	c.progs = append(c.progs, p)
	return p
}

// maxRange is the largest count lists.range accepts.
const maxRange = 10_000

// checkRanges rejects lists.range calls whose count is not a constant of at most
// maxRange. The function allocates its whole list before CEL can count the cost, so a
// count read from the parent would let whoever writes the parent exhaust the
// controller's memory.
func (c *compiler) checkRanges(w where, source, src string, off int, checked *cel.Ast) bool {
	native := checked.NativeRep()
	ok := true
	visit(native.Expr(), func(e celast.Expr) bool {
		if e.Kind() != celast.CallKind || e.AsCall().FunctionName() != "lists.range" {
			return true
		}
		args := e.AsCall().Args()
		if len(args) == 1 && args[0].Kind() == celast.LiteralKind {
			if n, isInt := args[0].AsLiteral().(types.Int); isInt && n <= maxRange {
				return true
			}
		}
		ok = false
		loc := native.SourceInfo().GetStartLocation(e.ID())
		c.fail(w, source, columnOf(source, off, runeOffset(src, loc)), fmt.Sprintf("lists.range needs a literal count of at most %d: it allocates the whole list before its cost is counted", maxRange))
		return true
	})
	return ok
}

// mismatch explains why a static type cannot produce the wanted kind of value, or
// returns "" when it can (dynamic types are checked when evaluated).
func mismatch(t *cel.Type, wanted want) string {
	if t == nil || wanted == wantAny || celenv.IsDynamic(t) {
		return ""
	}
	ok := true
	switch wanted {
	case wantBool:
		ok = t.Kind() == types.BoolKind
	case wantList:
		ok = t.Kind() == types.ListKind
	case wantMap:
		ok = t.Kind() == types.StructKind ||
			(t.Kind() == types.MapKind && (celenv.IsDynamic(t.Parameters()[0]) || t.Parameters()[0].Kind() == types.StringKind))
	case wantText:
		switch t.Kind() {
		case types.ListKind, types.MapKind, types.StructKind, types.NullTypeKind:
			ok = false
		case types.OpaqueKind:
			ok = t.TypeName() != "optional_type"
		}
		if !ok {
			return fmt.Sprintf("cannot interpolate a %s into a string; make the field exactly ${...} to keep the value's type, or convert it (string(), join(), format())", typeName(t))
		}
	}
	if ok {
		return ""
	}
	msg := fmt.Sprintf("must evaluate to %s, not %s", wanted, typeName(t))
	if wanted == wantBool && isOptional(t) {
		// parent.?spec.enabled: a field that may be missing.
		msg += "; add .orValue(false) to read a missing value as false"
	}
	return msg
}

// isOptional reports whether t is an optional (the type of x.?y and m[?k]).
func isOptional(t *cel.Type) bool {
	return t.Kind() == types.OpaqueKind && t.TypeName() == "optional_type"
}

// typeName renders a type for messages.
func typeName(t *cel.Type) string {
	return t.String()
}

// issues reports CEL parse or check errors, improving the messages CEL gives for a
// misspelled field or variable (hints).
func (c *compiler) issues(w where, source, src string, off int, iss *cel.Issues, env *cel.Env, parsed *cel.Ast) {
	h := hints{childIDs: c.childIDs, refIDs: c.refIDs, envs: c.envs}
	for _, e := range iss.Errors() {
		c.fail(w, source, columnOf(source, off, runeOffset(src, e.Location)), h.improve(e.Message, env, parsed, e.ExprID))
	}
}

// fail records a problem in the expression at w.
func (c *compiler) fail(w where, source string, column int, msg string) {
	*c.errs = append(*c.errs, &Error{
		Rule: w.Rule, Child: w.Child, Ref: w.Ref, Field: string(w.Field), Expr: source,
		Column: column, Message: msg, path: string(w.Path),
	})
}

// runeOffset converts a CEL location (1-based line, 0-based column in code points) into
// a 0-based code point offset in src, or -1 when there is none.
func runeOffset(src string, loc common.Location) int {
	if loc == nil || loc.Line() <= 0 {
		return -1
	}
	line, off := 1, 0
	for _, r := range src {
		if line == loc.Line() {
			break
		}
		off++
		if r == '\n' {
			line++
		}
	}
	return off + loc.Column()
}

// columnOf converts an offset inside the CEL src that starts at byte off of the field
// text source into a 1-based column in source; 0 when the offset is unknown.
func columnOf(source string, off, srcRunes int) int {
	if srcRunes < 0 || off > len(source) {
		return 0
	}
	return utf8.RuneCountInString(source[:off]) + srcRunes + 1
}

// visit calls fn for e and every expression below it, depth first; fn returns false to
// stop the walk.
func visit(e celast.Expr, fn func(celast.Expr) bool) bool {
	if e == nil {
		return true
	}
	if !fn(e) {
		return false
	}
	for _, sub := range subExprs(e) {
		if !visit(sub, fn) {
			return false
		}
	}
	return true
}

// subExprs lists the direct sub-expressions of e.
func subExprs(e celast.Expr) []celast.Expr {
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
