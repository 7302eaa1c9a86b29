package template

import (
	"fmt"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubecel/kubecel/rules/internal/kindschema"
	"github.com/kubecel/kubecel/rules/internal/parse"
	"github.com/kubecel/kubecel/rules/internal/tree"
)

// prog is the test's record of a compiled expression: its text, how it was compiled.
type prog struct {
	src   string
	whole bool
	field string
}

func (p *prog) Program() cel.Program { return nil }
func (p *prog) CEL() string          { return p.src }

// compiler records what Compile asks of it.
type compiler struct {
	problems []string
}

func (c *compiler) Expr(w parse.Where, _, src string, _ int, whole bool, _ kindschema.Place) *prog {
	if src == "bad" {
		c.problems = append(c.problems, string(w.Field)+": does not compile")
		return nil
	}
	return &prog{src: src, whole: whole, field: string(w.Field)}
}

func (c *compiler) Fail(w parse.Where, source string, column int, msg string) {
	c.problems = append(c.problems, fmt.Sprintf("%s: %s (col %d): %s", w.Field, source, column, msg))
}

func (c *compiler) Problem(w parse.Where, msg string) {
	c.problems = append(c.problems, string(w.Field)+": "+msg)
}

type node = tree.Node[*prog]

var cmpNodes = cmp.Options{cmp.AllowUnexported(prog{}), cmpopts.IgnoreUnexported(node{}, tree.Part[*prog]{})}

func TestCompile(t *testing.T) {
	tests := []struct {
		name         string
		v            any
		want         *node
		wantProblems []string
	}{
		{name: "constant", v: int64(3), want: &node{Kind: tree.Const, Value: int64(3)}},
		{name: "plain string", v: "web", want: &node{Kind: tree.Const, Value: "web"}},
		{name: "escaped", v: "$${x}", want: &node{Kind: tree.Const, Value: "${x}"}},
		{name: "empty string", v: "", want: &node{Kind: tree.Const, Value: ""}},
		{name: "whole expression", v: "${parent.spec.n}", want: &node{Kind: tree.Expr, Prog: &prog{src: "parent.spec.n", whole: true}}},
		{
			name: "text",
			v:    "app-${parent.metadata.name}-${i}",
			want: &node{Kind: tree.Text, Parts: []tree.Part[*prog]{{Text: "app-"}, {IsExpr: true, Prog: &prog{src: "parent.metadata.name"}}, {Text: "-"}, {IsExpr: true, Prog: &prog{src: "i"}}}},
		},
		{
			name: "map keys sorted, escapes resolved, lists",
			v:    map[string]any{"b": []any{"x", "${y}"}, "$${a}": true},
			want: &node{Kind: tree.Map, Keys: []string{"${a}", "b"}, Elems: []*node{
				{Kind: tree.Const, Value: true},
				{Kind: tree.List, Elems: []*node{{Kind: tree.Const, Value: "x"}, {Kind: tree.Expr, Prog: &prog{src: "y", whole: true, field: "b[1]"}}}},
			}},
		},
		{
			name:         "key with an expression",
			v:            map[string]any{"${k}": "v"},
			want:         &node{Kind: tree.Map, Keys: []string{"${k}"}, Elems: []*node{{Kind: tree.Const, Value: "v"}}},
			wantProblems: []string{`["${k}"]: ${k} (col 0): a map key cannot hold ${}; to compute keys, make the whole map one ${} expression`},
		},
		{
			name:         "unterminated",
			v:            map[string]any{"name": "ab${x"},
			want:         &node{Kind: tree.Map, Keys: []string{"name"}, Elems: []*node{{Kind: tree.Const, Value: "ab${x"}}},
			wantProblems: []string{"name: ab${x (col 3): unterminated ${: missing closing }"},
		},
		{
			name:         "expression that does not compile",
			v:            map[string]any{"x": "a${bad}"},
			want:         &node{Kind: tree.Map, Keys: []string{"x"}, Elems: []*node{{Kind: tree.Text, Parts: []tree.Part[*prog]{{Text: "a"}, {IsExpr: true}}}}},
			wantProblems: []string{"x: does not compile"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &compiler{}
			got := Compile[*prog](c, tt.v, parse.Where{}, kindschema.Place{})
			if diff := cmp.Diff(tt.wantProblems, c.problems); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
			// The expected trees leave the field of top-level expressions out.
			fixFields(tt.want, got)
			if diff := cmp.Diff(tt.want, got, cmpNodes); diff != "" {
				t.Errorf("Compile() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// fixFields copies the fields the compiler recorded into want's programs where want
// leaves them empty, so that the tables only state the fields that matter.
func fixFields(want, got *node) {
	if want == nil || got == nil {
		return
	}
	if want.Prog != nil && got.Prog != nil && want.Prog.field == "" {
		want.Prog.field = got.Prog.field
	}
	for i := range want.Parts {
		if i < len(got.Parts) && want.Parts[i].Prog != nil && got.Parts[i].Prog != nil && want.Parts[i].Prog.field == "" {
			want.Parts[i].Prog.field = got.Parts[i].Prog.field
		}
	}
	for i := range want.Elems {
		if i < len(got.Elems) {
			fixFields(want.Elems[i], got.Elems[i])
		}
	}
}

func TestCompileChecksTheSchema(t *testing.T) {
	integer := apiextensionsv1.JSONSchemaProps{Type: "integer"}
	s := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": integer, "port": integer}},
	}}
	c := &compiler{}
	v := map[string]any{"spec": map[string]any{"replicas": "3", "port": "${a}-${b}", "replica": int64(1)}}
	Compile[*prog](c, v, parse.Where{}, kindschema.Object("Deployment", s, nil))
	want := []string{
		`spec.port: ${a}-${b} (col 0): text with ${} is a string, but Deployment .spec.port is an integer; make the field exactly ${...} to keep the value's type`,
		`spec.replica: unknown field (did you mean 'replicas'?): Deployment .spec declares no field "replica", and the API server refuses undeclared fields`,
		`spec.replicas: Deployment .spec.replicas is an integer, but the template gives the string "3"; write 3 without quotes`,
	}
	if diff := cmp.Diff(want, c.problems); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

func TestFromLiteral(t *testing.T) {
	env, err := cel.NewEnv(cel.Variable("parent", cel.DynType), cel.OptionalTypes())
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(src string, w parse.Where) (*prog, bool) {
		if src == "parent.fails" {
			return nil, false
		}
		return &prog{src: src, field: string(w.Field)}, true
	}
	tests := []struct {
		expr string
		want *node
	}{
		{
			expr: `{"kind": "ConfigMap", "n": 1, "b": true, "z": null, "data": {"k": parent.x + "s"}, "list": [parent.y, "c"]}`,
			want: &node{Kind: tree.Map, Keys: []string{"b", "data", "kind", "list", "n", "z"}, Elems: []*node{
				{Kind: tree.Const, Value: true},
				{Kind: tree.Map, Keys: []string{"k"}, Elems: []*node{{Kind: tree.Expr, Exact: true, Prog: &prog{src: `parent.x + "s"`, field: "expr.data.k"}}}},
				{Kind: tree.Const, Value: "ConfigMap"},
				{Kind: tree.List, Elems: []*node{{Kind: tree.Expr, Exact: true, Prog: &prog{src: "parent.y", field: "expr.list[0]"}}, {Kind: tree.Const, Value: "c"}}},
				{Kind: tree.Const, Value: int64(1)},
				{Kind: tree.Const, Value: nil},
			}},
		},
		{expr: `parent.spec`},
		{expr: `[1, 2]`},
		{expr: `{"a": 1, "a": 2}`},
		{expr: `{?"a": optional.of(1)}`},
		{expr: `{"a": [?optional.none()]}`},
		{expr: `{parent.k: 1}`},
		{expr: `{"a": parent.fails}`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			ast, iss := env.Parse(tt.expr)
			if iss.Err() != nil {
				t.Fatal(iss.Err())
			}
			native := ast.NativeRep()
			got, ok := FromLiteral(native.Expr(), native.SourceInfo(), parse.Where{Field: "expr"}, leaf)
			if ok != (tt.want != nil) {
				t.Fatalf("FromLiteral() ok = %v, want %v", ok, tt.want != nil)
			}
			if diff := cmp.Diff(tt.want, got, cmpNodes); diff != "" {
				t.Errorf("FromLiteral() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
