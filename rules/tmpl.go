package rules

import (
	"errors"
	"fmt"
	"sort"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubecel/kubecel/rules/internal/interp"
	"github.com/kubecel/kubecel/rules/internal/kindschema"
	"github.com/kubecel/kubecel/rules/internal/tree"
)

// This file compiles template values (a child's template, the status fields) into a
// tree of nodes (package tree) that evaluation turns into plain JSON-like values.

// The trees, their evaluation and batches are package tree's; these name its types for
// the programs of this package.
type (
	// node is one compiled template value.
	node = tree.Node[*program]
	// textPart is a piece of a tree.Text node.
	textPart = tree.Part[*program]
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

// compileValue compiles a value from the rules file; every string in it may hold ${}.
func (c *compiler) compileValue(env *cel.Env, v any, w where, vs valueSchema) *node {
	if _, isString := v.(string); !isString {
		if msg := vs.LiteralMismatch(v); msg != "" {
			fail(c.errs, w, msg)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		n := &node{Kind: tree.Map, Keys: make([]string, 0, len(x))}
		for k := range x {
			n.Keys = append(n.Keys, k)
		}
		sort.Strings(n.Keys)
		n.Elems = make([]*node, len(n.Keys))
		for i, k := range n.Keys {
			kw := w.Key(k)
			key, ok := c.literalKey(k, kw)
			if ok {
				n.Keys[i] = key
				if msg := vs.UnknownField(key); msg != "" {
					fail(c.errs, kw, msg)
				}
			}
			n.Elems[i] = c.compileValue(env, x[k], kw, vs.Key(key))
		}
		return n
	case []any:
		n := &node{Kind: tree.List, Elems: make([]*node, len(x))}
		for i, item := range x {
			n.Elems[i] = c.compileValue(env, item, w.Index(i), vs.Item(i))
		}
		return n
	case string:
		return c.compileString(env, x, w, vs)
	}
	return &node{Kind: tree.Const, Value: v}
}

// literalKey resolves the escapes of a map key, which cannot hold expressions.
func (c *compiler) literalKey(k string, w where) (string, bool) {
	segs, err := interp.Parse(k)
	if err == nil && interp.HasExpr(segs) {
		err = errors.New("a map key cannot hold ${}; to compute keys, make the whole map one ${} expression")
	}
	if err != nil {
		c.fail(w, k, 0, err.Error())
		return k, false
	}
	if len(segs) == 0 {
		return "", true
	}
	return segs[0].Text, true
}

func (c *compiler) compileString(env *cel.Env, s string, w where, vs valueSchema) *node {
	segs, err := interp.Parse(s)
	if err != nil {
		var te *interp.Error
		col := 0
		if errors.As(err, &te) {
			col = utf8.RuneCountInString(s[:te.Offset]) + 1
		}
		c.fail(w, s, col, err.Error())
		return &node{Kind: tree.Const, Value: s}
	}
	switch {
	case !interp.HasExpr(segs):
		text := ""
		if len(segs) == 1 {
			text = segs[0].Text
		}
		if msg := vs.LiteralMismatch(text); msg != "" {
			fail(c.errs, w, msg)
		}
		return &node{Kind: tree.Const, Value: text}
	case interp.IsWholeExpr(s, segs):
		p := c.compile(env, w, s, segs[0].Text, segs[0].Offset, wantAny)
		c.checkExprFields(p, segs[0].Offset, vs)
		return &node{Kind: tree.Expr, Prog: p}
	}
	if vs.Schema != nil && !vs.Schema.XIntOrString && vs.Schema.Type != "" && vs.Schema.Type != "string" {
		c.fail(w, s, 0, fmt.Sprintf("text with ${} is a string, but %s %s is %s; make the field exactly ${...} to keep the value's type", vs.Kind, vs.At, kindschema.Article(vs.Schema.Type)))
	}
	n := &node{Kind: tree.Text, Parts: make([]textPart, len(segs))}
	for i, sg := range segs {
		if !sg.Expr {
			n.Parts[i] = textPart{Text: sg.Text}
			continue
		}
		n.Parts[i] = textPart{IsExpr: true, Prog: c.compile(env, w, s, sg.Text, sg.Offset, wantText)}
	}
	return n
}
