package rules

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubecel/kubecel/rules/internal/interp"
)

// This file compiles template values (a child's template, the status fields) into a
// tree of nodes that evaluate.go turns into plain JSON-like values.

type nodeKind uint8

const (
	// constNode is a literal scalar.
	constNode nodeKind = iota
	mapNode
	listNode
	// exprNode is a string that is exactly ${expr}: the value keeps the expression's type.
	exprNode
	// textNode is a string with ${} interpolations.
	textNode
)

// node is one compiled template value. Nodes are immutable once compiled.
type node struct {
	kind nodeKind
	// value is a constNode's value: a string, int64, float64, bool or nil.
	value any
	// keys are a mapNode's keys, sorted; elems are its values, in the same order, or a
	// listNode's items.
	keys  []string
	elems []*node
	// prog is an exprNode's expression.
	prog *program
	// exact keeps an exprNode's value as it is, as in a CEL map literal: an optional
	// value is then an error instead of leaving the field out.
	exact bool
	// parts are a textNode's pieces.
	parts []textPart
}

// textPart is literal text, or an expression when prog is set.
type textPart struct {
	text string
	prog *program
}

// valueSchema is where a template value sits in the schema of the child's kind, when
// that is known, so that whole-string expressions can be checked against it.
type valueSchema struct {
	schema *apiextensionsv1.JSONSchemaProps
	// kind and at name the place in messages: `Deployment` and `.spec.replicas`.
	kind string
	at   string
	// resource is true at the root of an object or of an embedded resource, which always
	// has apiVersion, kind and metadata (fields.go).
	resource bool
}

// objectSchema is the valueSchema of the root of an object of a kind.
func objectSchema(kind string, s *apiextensionsv1.JSONSchemaProps) valueSchema {
	return valueSchema{kind: kind, schema: s, resource: s != nil}
}

func (vs valueSchema) key(k string) valueSchema {
	vs.at += "." + k
	if vs.schema == nil && !vs.resource {
		return vs
	}
	vs.schema, _ = fieldOf(vs.schema, k, vs.resource)
	vs.resource = vs.schema != nil && vs.schema.XEmbeddedResource
	return vs
}

func (vs valueSchema) item(i int) valueSchema {
	vs.at += fmt.Sprintf("[%d]", i)
	if vs.schema != nil && vs.schema.Items != nil {
		vs.schema = vs.schema.Items.Schema
	} else {
		vs.schema = nil
	}
	vs.resource = vs.schema != nil && vs.schema.XEmbeddedResource
	return vs
}

// compileValue compiles a value from the rules file; every string in it may hold ${}.
func (c *compiler) compileValue(env *cel.Env, v any, w where, vs valueSchema) *node {
	if _, isString := v.(string); !isString {
		if msg := literalMismatch(v, vs); msg != "" {
			fail(c.errs, w, msg)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		n := &node{kind: mapNode, keys: make([]string, 0, len(x))}
		for k := range x {
			n.keys = append(n.keys, k)
		}
		sort.Strings(n.keys)
		n.elems = make([]*node, len(n.keys))
		for i, k := range n.keys {
			kw := w.key(k)
			key, ok := c.literalKey(k, kw)
			if ok {
				n.keys[i] = key
				if msg := vs.unknownField(key); msg != "" {
					fail(c.errs, kw, msg)
				}
			}
			n.elems[i] = c.compileValue(env, x[k], kw, vs.key(key))
		}
		return n
	case []any:
		n := &node{kind: listNode, elems: make([]*node, len(x))}
		for i, item := range x {
			n.elems[i] = c.compileValue(env, item, w.index(i), vs.item(i))
		}
		return n
	case string:
		return c.compileString(env, x, w, vs)
	}
	return &node{kind: constNode, value: v}
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
		return &node{kind: constNode, value: s}
	}
	switch {
	case !interp.HasExpr(segs):
		text := ""
		if len(segs) == 1 {
			text = segs[0].Text
		}
		if msg := literalMismatch(text, vs); msg != "" {
			fail(c.errs, w, msg)
		}
		return &node{kind: constNode, value: text}
	case interp.IsWholeExpr(s, segs):
		p := c.compile(env, w, s, segs[0].Text, segs[0].Offset, wantAny)
		c.checkExprFields(p, segs[0].Offset, vs)
		return &node{kind: exprNode, prog: p}
	}
	if vs.schema != nil && !vs.schema.XIntOrString && vs.schema.Type != "" && vs.schema.Type != "string" {
		c.fail(w, s, 0, fmt.Sprintf("text with ${} is a string, but %s %s is %s; make the field exactly ${...} to keep the value's type", vs.kind, vs.at, article(vs.schema.Type)))
	}
	n := &node{kind: textNode, parts: make([]textPart, len(segs))}
	for i, sg := range segs {
		if !sg.Expr {
			n.parts[i] = textPart{text: sg.Text}
			continue
		}
		n.parts[i] = textPart{prog: c.compile(env, w, s, sg.Text, sg.Offset, wantText)}
	}
	return n
}

// schemaMismatch explains why a whole-string expression of static type t cannot fill
// the schema field at vs, or returns "" when it can or when either is unknown.
func schemaMismatch(t *cel.Type, vs valueSchema) string {
	s := vs.schema
	if t == nil || s == nil || isDynamic(t) || t.Kind() == types.NullTypeKind {
		return ""
	}
	if t.Kind() == types.OpaqueKind && t.TypeName() == "optional_type" {
		// An empty optional leaves the field out; a present one must fit.
		return schemaMismatch(t.Parameters()[0], vs)
	}
	var ok bool
	want := article(s.Type)
	switch {
	case s.XIntOrString:
		ok = t.Kind() == types.IntKind || t.Kind() == types.UintKind || t.Kind() == types.StringKind
		want = "an integer or a string"
	case s.Type == "string":
		switch t.Kind() {
		case types.StringKind, types.BytesKind, types.TimestampKind, types.DurationKind, types.OpaqueKind:
			ok = true
		}
	case s.Type == "integer":
		ok = t.Kind() == types.IntKind || t.Kind() == types.UintKind || t.Kind() == types.DoubleKind
	case s.Type == "number":
		ok = t.Kind() == types.IntKind || t.Kind() == types.UintKind || t.Kind() == types.DoubleKind
	case s.Type == "boolean":
		ok = t.Kind() == types.BoolKind
	case s.Type == "object":
		ok = t.Kind() == types.MapKind || t.Kind() == types.StructKind
	case s.Type == "array":
		ok = t.Kind() == types.ListKind
	default:
		ok = true
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("the expression is of type %s, but %s %s is %s", typeName(t), vs.kind, vs.at, want)
}

func article(schemaType string) string {
	switch schemaType {
	case "integer", "object", "array":
		return "an " + schemaType
	case "boolean":
		return "a boolean"
	}
	return "a " + strings.TrimSpace(schemaType)
}
