package exprcheck

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/ext"
	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func check(t *testing.T, src string) *cel.Ast {
	t.Helper()
	env, err := cel.NewEnv(cel.Variable("parent", cel.DynType), cel.Variable("children", cel.MapType(cel.StringType, cel.DynType)), cel.OptionalTypes(), ext.Lists())
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		t.Fatalf("compile %q: %v", src, iss.Err())
	}
	return ast
}

func TestMismatch(t *testing.T) {
	tests := []struct {
		t    *cel.Type
		want Want
		msg  string
	}{
		{cel.BoolType, Bool, ""},
		{cel.DynType, Bool, ""},
		{cel.IntType, Any, ""},
		{cel.StringType, Bool, "must evaluate to a bool, not string"},
		{cel.OptionalType(cel.BoolType), Bool, "must evaluate to a bool, not optional_type(bool); add .orValue(false) to read a missing value as false"},
		{cel.ListType(cel.IntType), List, ""},
		{cel.MapType(cel.StringType, cel.DynType), Map, ""},
		{cel.MapType(cel.IntType, cel.DynType), Map, "must evaluate to a map, not map(int, dyn)"},
		{cel.IntType, Text, ""},
		{cel.ListType(cel.StringType), Text, "cannot interpolate a list(string) into a string; make the field exactly ${...} to keep the value's type, or convert it (string(), join(), format())"},
		{cel.OptionalType(cel.StringType), Text, "cannot interpolate a optional_type(string) into a string; make the field exactly ${...} to keep the value's type, or convert it (string(), join(), format())"},
	}
	for _, tt := range tests {
		if got := Mismatch(tt.t, tt.want); got != tt.msg {
			t.Errorf("Mismatch(%s, %s) = %q, want %q", tt.t, tt.want, got, tt.msg)
		}
	}
}

func TestColumn(t *testing.T) {
	// The CEL starts after "héllo ${" (8 bytes, 7 characters); its error is on its
	// second line, column 2.
	source := "héllo ${a +\n  b}"
	src := "a +\n  b"
	ast := check(t, "1")
	loc := ast.NativeRep().SourceInfo().GetStartLocation(0)
	if got := RuneOffset(src, loc); got != -1 {
		t.Errorf("RuneOffset(no location) = %d, want -1", got)
	}
	off := RuneOffset(src, location{line: 2, col: 2})
	if off != 6 {
		t.Fatalf("RuneOffset() = %d, want 6", off)
	}
	if got := Column(source, 9, off); got != 15 {
		t.Errorf("Column() = %d, want 15", got)
	}
	if got := Column(source, 9, -1); got != 0 {
		t.Errorf("Column(unknown) = %d, want 0", got)
	}
}

// location is a CEL location.
type location struct{ line, col int }

func (l location) Line() int   { return l.line }
func (l location) Column() int { return l.col }

func TestVarAccess(t *testing.T) {
	tests := []struct {
		src      string
		key      string
		isRead   bool
		constant bool
	}{
		{`children.db`, "db", true, true},
		{`children["my-db"]`, "my-db", true, true},
		{`children[parent.name]`, "", true, false},
		{`children[?"db"]`, "db", true, true},
		{`parent.db`, "", false, false},
	}
	for _, tt := range tests {
		var key string
		var isRead, constant bool
		Visit(check(t, tt.src).NativeRep().Expr(), func(e celast.Expr) bool {
			if k, r, c := VarAccess(e, "children"); r {
				key, isRead, constant = k, r, c
				return false
			}
			return true
		})
		if key != tt.key || isRead != tt.isRead || constant != tt.constant {
			t.Errorf("VarAccess(%s) = %q, %v, %v; want %q, %v, %v", tt.src, key, isRead, constant, tt.key, tt.isRead, tt.constant)
		}
	}
}

func TestCycles(t *testing.T) {
	ids := []string{"a", "b", "c", "d", "e"}
	reads := map[string][]string{"a": {"b"}, "b": {"c", "x"}, "c": {"a", "b"}, "d": {"d"}, "e": {"a"}}
	want := [][]string{{"a", "b", "c", "a"}, {"b", "c", "b"}, {"d", "d"}}
	if diff := cmp.Diff(want, Cycles(ids, reads)); diff != "" {
		t.Errorf("Cycles() mismatch (-want +got):\n%s", diff)
	}
	if got := Cycles(ids, map[string][]string{"b": {"a"}}); got != nil {
		t.Errorf("Cycles(no cycle) = %v", got)
	}
}

func TestUnboundedRanges(t *testing.T) {
	tests := []struct {
		src  string
		want int
	}{
		{`lists.range(10)`, 0},
		{`lists.range(10000)`, 0},
		{`lists.range(10001)`, 1},
		{`lists.range(int(parent.n)) + lists.range(size(parent.items))`, 2},
		{`[1, 2]`, 0},
	}
	for _, tt := range tests {
		if got := UnboundedRanges(check(t, tt.src)); len(got) != tt.want {
			t.Errorf("UnboundedRanges(%s) = %v, want %d", tt.src, got, tt.want)
		}
	}
}

func TestParentReads(t *testing.T) {
	tests := []struct {
		src    string
		tested map[string]bool
		reads  [][]string
	}{
		{src: `parent.spec.suffix + "x"`, tested: map[string]bool{}, reads: [][]string{{"spec", "suffix"}}},
		{src: `has(parent.spec.suffix)`, tested: map[string]bool{"spec.suffix": true}},
		{src: `parent.?spec.suffix.orValue("")`, tested: map[string]bool{}},
		{src: `children.x.y`, tested: map[string]bool{}},
	}
	for _, tt := range tests {
		tested, reads := ParentReads(check(t, tt.src))
		if diff := cmp.Diff(tt.tested, tested); diff != "" {
			t.Errorf("%s: tested mismatch (-want +got):\n%s", tt.src, diff)
		}
		if diff := cmp.Diff(tt.reads, reads); diff != "" {
			t.Errorf("%s: reads mismatch (-want +got):\n%s", tt.src, diff)
		}
	}
}

func TestOptionalStep(t *testing.T) {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	s := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Required: []string{"name"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"name":   str,
			"suffix": str,
			"mode":   {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"a"`)}},
			"nested": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"x": str}},
			"free":   {Type: "object"},
		}},
	}}
	tests := []struct {
		path []string
		want int
	}{
		{[]string{"spec", "name"}, -1},
		{[]string{"spec", "suffix"}, 1},
		{[]string{"spec", "mode"}, -1},
		{[]string{"spec", "nested", "x"}, 1},
		{[]string{"spec", "free", "x"}, 1},
		{[]string{"metadata", "labels"}, -1},
		{[]string{"spec", "unknown"}, -1},
	}
	for _, tt := range tests {
		if got := OptionalStep(s, tt.path); got != tt.want {
			t.Errorf("OptionalStep(%v) = %d, want %d", tt.path, got, tt.want)
		}
	}
}

func TestMissingKeyHint(t *testing.T) {
	ast := check(t, `parent.spec.suffix + "x"`)
	tests := []struct {
		err  error
		want string
	}{
		{errors.New("no such key: suffix"), " (parent.spec.suffix is not set; write parent.spec.?suffix.orValue(DEFAULT) for a default, or test it with has(parent.spec.suffix))"},
		{errors.New("no such key: other"), ""},
		{errors.New("division by zero"), ""},
	}
	for _, tt := range tests {
		if got := MissingKeyHint(ast, tt.err); got != tt.want {
			t.Errorf("MissingKeyHint(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
	if got := MissingKeyHint(nil, errors.New("no such key: suffix")); got != "" {
		t.Errorf("MissingKeyHint(nil AST) = %q", got)
	}
}

// TestSelectionsKeepTheFirstChainOfEachField checks what a program keeps for
// MissingKeyHint: the chains from a variable, in the order of a walk from the root, the
// first of each field name only, without has() tests or chains over a call; and that
// its hints are those of a search of the AST itself (hintByWalk).
func TestSelectionsKeepTheFirstChainOfEachField(t *testing.T) {
	tests := []struct {
		src  string
		want Selections
	}{
		{`parent.spec.value`, Selections{"parent.spec.value", "parent.spec"}},
		{`parent.spec.a.name + children.x.metadata.name`, Selections{"parent.spec.a.name", "parent.spec.a", "parent.spec", "children.x.metadata", "children.x"}},
		{`has(parent.spec.b) ? parent.spec.c : "x"`, Selections{"parent.spec", "parent.spec.c"}},
		{`parent.spec.list.map(e, e.name).size() > 0 && [1].size() > 0`, Selections{"parent.spec.list", "parent.spec", "e.name"}},
		{`"x".size() > 0`, nil},
	}
	for _, tt := range tests {
		ast := check(t, tt.src)
		got := SelectionsOf(ast)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("SelectionsOf(%s) (-want +got):\n%s", tt.src, diff)
		}
		for _, key := range []string{"value", "name", "spec", "b", "c", "x", "a", "list"} {
			err := errors.New("no such key: " + key)
			if h, want := got.Hint(err), hintByWalk(ast, key); h != want {
				t.Errorf("%s: Hint(%v) = %q, want %q", tt.src, err, h, want)
			}
		}
	}
}

// hintByWalk is the hint for a missing key found by searching the checked AST for the
// first selection of it that starts at a variable, as MissingKeyHint did before programs
// kept Selections instead of their ASTs.
func hintByWalk(checked *cel.Ast, key string) string {
	var field string
	Visit(checked.NativeRep().Expr(), func(e celast.Expr) bool {
		if e.Kind() == celast.SelectKind && !e.AsSelect().IsTestOnly() && e.AsSelect().FieldName() == key {
			field = selectionText(e)
		}
		return field == ""
	})
	if field == "" {
		return ""
	}
	return fmt.Sprintf(" (%s is not set; %s)", field, OptionalAdvice(field))
}
