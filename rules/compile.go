package rules

import (
	"fmt"

	"github.com/google/cel-go/cel"

	"github.com/kubecel/kubecel/rules/internal/celbudget"
	"github.com/kubecel/kubecel/rules/internal/celenv"
	"github.com/kubecel/kubecel/rules/internal/exprcheck"
)

// This file compiles one CEL expression: parse, type-check, check the result type, find
// the children it reads, estimate its cost and build the program. Every problem becomes
// an *Error that names the place and the column.

// want is the kind of value an expression must produce (exprcheck.Want).
type want = exprcheck.Want

const (
	wantAny  = exprcheck.Any
	wantBool = exprcheck.Bool
	wantList = exprcheck.List
	wantMap  = exprcheck.Map
	wantText = exprcheck.Text
)

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
	// checked is the type-checked AST, for static analysis at load time; a loaded rule
	// drops it (dropChecked), as evaluation needs only its selections.
	checked *cel.Ast
	// selections are what a "no such key" error's hint names (exprcheck.Selections).
	selections exprcheck.Selections
	// sensitive is true when the expression reads Secret data (sensitive.go): its
	// errors' texts are withheld.
	sensitive bool
}

// Program implements tree.Program.
func (p *program) Program() cel.Program { return p.prg }

// CEL implements tree.Program.
func (p *program) CEL() string { return p.src }

// compiler compiles the expressions of one rule.
type compiler struct {
	envs *celenv.Envs
	// share is what the rules of the load share (share.go); nil for none.
	share *share
	// at is the rule, where a problem of the whole rule is reported.
	at   where
	errs *ErrorList
	// envFailed is set once an environment could not be built, which is reported once.
	envFailed bool
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

// env returns the environment get builds (a method of celenv.Envs), or nil when it
// cannot be built, which fails the rule.
func (c *compiler) env(get func() (*cel.Env, error)) *cel.Env {
	env, err := get()
	if err != nil {
		if !c.envFailed {
			fail(c.errs, c.at, "cannot build the CEL environment: "+err.Error())
			c.envFailed = true
		}
		return nil
	}
	return env
}

// compile compiles src, the CEL found at byte offset off of the field text source (0
// when the whole field is CEL), in env; nil env (one that could not be built, already
// reported) compiles nothing.
func (c *compiler) compile(env *cel.Env, w where, source, src string, off int, wanted want) *program {
	if env == nil {
		return nil
	}
	parsed, iss := c.envs.Parse(src)
	if iss.Err() != nil {
		c.issues(w, source, src, off, iss, nil, nil)
		return nil
	}
	checked, iss := env.Check(parsed)
	if iss.Err() != nil {
		c.issues(w, source, src, off, iss, env, parsed)
		return nil
	}
	p := &program{w: w, source: source, src: src, out: checked.OutputType(), checked: checked, selections: exprcheck.SelectionsOf(checked)}
	if msg := exprcheck.Mismatch(p.out, wanted); msg != "" {
		c.fail(w, source, exprcheck.Column(source, off, 0), msg)
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
	prg, err := c.program(env, src, checked)
	if err != nil {
		c.fail(w, source, 0, "cannot build the program: "+err.Error())
		return nil
	}
	p.prg = prg
	c.progs = append(c.progs, p)
	return p
}

// program builds the program of src, checked in env, or takes the one built for the
// same text in the same environment by another rule of the load (share.go).
func (c *compiler) program(env *cel.Env, src string, checked *cel.Ast) (cel.Program, error) {
	return c.share.program(env, src, func() (cel.Program, error) {
		return env.Program(checked, c.cost.ProgramOptions(env, checked)...)
	})
}

// dropChecked drops the checked ASTs of the programs compiled, once the rule is loaded
// and nothing analyses them any more: they are most of a program's memory.
func (c *compiler) dropChecked() {
	for _, p := range c.progs {
		p.checked = nil
	}
}

// checkRanges rejects lists.range calls whose count is not a constant of at most
// exprcheck.MaxRange (exprcheck.UnboundedRanges).
func (c *compiler) checkRanges(w where, source, src string, off int, checked *cel.Ast) bool {
	ids := exprcheck.UnboundedRanges(checked)
	for _, id := range ids {
		loc := checked.NativeRep().SourceInfo().GetStartLocation(id)
		c.fail(w, source, exprcheck.Column(source, off, exprcheck.RuneOffset(src, loc)), fmt.Sprintf("lists.range needs a literal count of at most %d: it allocates the whole list before its cost is counted", exprcheck.MaxRange))
	}
	return len(ids) == 0
}

// issues reports CEL parse or check errors, improving the messages CEL gives for a
// misspelled field or variable (hints).
func (c *compiler) issues(w where, source, src string, off int, iss *cel.Issues, env *cel.Env, parsed *cel.Ast) {
	h := hints{childIDs: c.childIDs, refIDs: c.refIDs, envs: c.envs}
	for _, e := range iss.Errors() {
		c.fail(w, source, exprcheck.Column(source, off, exprcheck.RuneOffset(src, e.Location)), h.improve(e.Message, env, parsed, e.ExprID))
	}
}

// fail records a problem in the expression at w.
func (c *compiler) fail(w where, source string, column int, msg string) {
	*c.errs = append(*c.errs, &Error{
		Rule: w.Rule, Child: w.Child, Ref: w.Ref, Field: string(w.Field), Expr: source,
		Column: column, Message: msg, path: string(w.Path),
	})
}
