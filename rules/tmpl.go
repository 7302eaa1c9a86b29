package rules

import (
	"github.com/google/cel-go/cel"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubecel/kubecel/rules/internal/kindschema"
	"github.com/kubecel/kubecel/rules/internal/template"
	"github.com/kubecel/kubecel/rules/internal/tree"
)

// This file compiles template values (a child's template, the status fields) into a
// tree of nodes (package tree) that evaluation turns into plain JSON-like values.

// The trees, their evaluation and batches are package tree's; these name its types for
// the programs of this package.
type (
	// node is one compiled template value.
	node = tree.Node[*program]
	// fill evaluates template trees for one set of variables.
	fill = tree.Fill[*program]
	// activation resolves the CEL variables of an expression.
	activation = tree.Activation
)

// valueSchema is where a template value sits in the schema of the child's kind
// (package kindschema), so that literals, fields and whole-string expressions can be
// checked against it.
type valueSchema = kindschema.Place

// objectSchema is the valueSchema of the root of an object of a kind.
func objectSchema(kind string, s *apiextensionsv1.JSONSchemaProps) valueSchema {
	return kindschema.Object(kind, s, objectMetaSchema())
}

// compileValue compiles a value from the rules file; every string in it may hold ${}
// (package template).
func (c *compiler) compileValue(env *cel.Env, v any, w where, vs valueSchema) *node {
	return template.Compile[*program](templateCompiler{c: c, env: env}, v, w, vs)
}

// templateCompiler compiles the expressions of a template in env for package template.
type templateCompiler struct {
	c   *compiler
	env *cel.Env
}

// Expr implements template.Compiler.
func (t templateCompiler) Expr(w where, source, src string, off int, whole bool, vs valueSchema) *program {
	if !whole {
		return t.c.compile(t.env, w, source, src, off, wantText)
	}
	p := t.c.compile(t.env, w, source, src, off, wantAny)
	t.c.checkExprFields(p, off, vs)
	return p
}

// Fail implements template.Compiler.
func (t templateCompiler) Fail(w where, source string, column int, msg string) {
	t.c.fail(w, source, column, msg)
}

// Problem implements template.Compiler.
func (t templateCompiler) Problem(w where, msg string) {
	fail(t.c.errs, w, msg)
}
