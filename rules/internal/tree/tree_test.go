package tree

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/go-cmp/cmp"

	"github.com/kubecel/kubecel/rules/internal/celbudget"
	"github.com/kubecel/kubecel/rules/internal/celenv"
	"github.com/kubecel/kubecel/rules/internal/celjson"
)

// prog is the test's record of a compiled expression.
type prog struct {
	src string
	prg cel.Program
}

func (p *prog) Program() cel.Program { return p.prg }
func (p *prog) CEL() string          { return p.src }

// host evaluates programs for Fill and records the failures, by CEL text.
type host struct {
	t      *testing.T
	evals  int
	failed []string
}

func (h *host) Eval(p *prog, vars *Activation, at int) (ref.Val, bool) {
	h.evals++
	out, _, err := p.prg.ContextEval(h.t.Context(), vars)
	if err != nil {
		h.Fail(p, at, err)
		return nil, false
	}
	return out, true
}

func (h *host) Fail(p *prog, _ int, err error) {
	src := "<none>"
	if p != nil {
		src = p.src
	}
	h.failed = append(h.failed, src+": "+err.Error())
}

var errTestLimit = errors.New("test memory limit exceeded")

var testMemory = celbudget.Memory{Exceeded: errTestLimit, Default: 1 << 20}

func testEnv(t *testing.T) *cel.Env {
	t.Helper()
	env, err := cel.NewEnv(cel.Variable(celenv.Parent, cel.DynType), cel.Variable(celenv.Each, cel.DynType), cel.OptionalTypes())
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func compile(t *testing.T, env *cel.Env, src string) *prog {
	t.Helper()
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		t.Fatalf("compile %q: %v", src, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	return &prog{src: src, prg: prg}
}

// Helpers that build trees.
func constant(v any) *Node[*prog] { return &Node[*prog]{Kind: Const, Value: v} }

func expr(p *prog) *Node[*prog] { return &Node[*prog]{Kind: Expr, Prog: p} }

func object(kv ...any) *Node[*prog] {
	n := &Node[*prog]{Kind: Map}
	for i := 0; i < len(kv); i += 2 {
		n.Keys = append(n.Keys, kv[i].(string))
		n.Elems = append(n.Elems, kv[i+1].(*Node[*prog]))
	}
	return n
}

func list(elems ...*Node[*prog]) *Node[*prog] {
	return &Node[*prog]{Kind: List, Elems: elems}
}

// text builds a Text node: strings are literal parts, *prog expression parts.
func text(parts ...any) *Node[*prog] {
	n := &Node[*prog]{Kind: Text}
	for _, p := range parts {
		switch x := p.(type) {
		case string:
			n.Parts = append(n.Parts, Part[*prog]{Text: x})
		case *prog:
			n.Parts = append(n.Parts, Part[*prog]{Prog: x, IsExpr: true})
		}
	}
	return n
}

func parentVars(budget *celbudget.Budget) *Activation {
	parent := map[string]any{"metadata": map[string]any{"name": "web"}, "spec": map[string]any{"replicas": int64(3), "tags": []any{"a", "b"}}}
	return &Activation{ParentObject: celjson.Value(parent), Bytes: budget}
}

func TestFillValue(t *testing.T) {
	env := testEnv(t)
	c := func(src string) *prog { return compile(t, env, src) }
	tests := []struct {
		name        string
		tree        *Node[*prog]
		want        any
		wantPresent bool
		wantFailed  []string
	}{
		{name: "constant", tree: constant(int64(1)), want: int64(1), wantPresent: true},
		{
			name: "map of expressions keeps their types",
			tree: object("name", expr(c("parent.metadata.name")), "replicas", expr(c("parent.spec.replicas * 2")), "fixed", constant(true)),
			want: map[string]any{"name": "web", "replicas": int64(6), "fixed": true}, wantPresent: true,
		},
		{
			name: "an empty optional leaves its field or item out",
			tree: object("gone", expr(c("parent.spec.?missing")), "list", list(expr(c("optional.none()")), expr(c("parent.?spec.replicas")))),
			want: map[string]any{"list": []any{int64(3)}}, wantPresent: true,
		},
		{name: "empty optional alone", tree: expr(c("optional.none()")), want: nil, wantPresent: false},
		{
			name:       "an exact expression keeps the optional, which cannot be stored",
			tree:       &Node[*prog]{Kind: Expr, Prog: c("optional.of(1)"), Exact: true},
			wantFailed: []string{"optional.of(1): an optional value cannot be stored; unwrap it with .orValue(default) or make it the whole field"},
		},
		{name: "text", tree: text("app-", c("parent.metadata.name"), "-", c("parent.spec.replicas")), want: "app-web-3", wantPresent: true},
		{
			name:       "text with a list fails on that part",
			tree:       text("tags: ", c("parent.spec.tags")),
			wantFailed: []string{"parent.spec.tags: cannot interpolate list into a string; convert it first (string(), join(), .orValue())"},
		},
		{
			name:       "a failed expression fails the map but the others are evaluated",
			tree:       object("a", expr(c("parent.spec.nope")), "b", expr(c("1/0"))),
			wantFailed: []string{"parent.spec.nope: no such key: nope", "1/0: division by zero"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := testMemory.Budget(1 << 20)
			h := &host{t: t}
			f := &Fill[*prog]{Host: h, Vars: parentVars(&b), At: -1}
			got, present, ok := f.Value(tt.tree)
			if diff := cmp.Diff(tt.wantFailed, h.failed); diff != "" {
				t.Fatalf("failures mismatch (-want +got):\n%s", diff)
			}
			if ok != (len(tt.wantFailed) == 0) {
				t.Fatalf("Value() ok = %v with failures %v", ok, h.failed)
			}
			if !ok {
				return
			}
			if present != tt.wantPresent {
				t.Errorf("Value() present = %v, want %v", present, tt.wantPresent)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Value() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTextBudget checks that an interpolated string is charged as a whole, and that its
// refusal names an expression of the field.
func TestTextBudget(t *testing.T) {
	env := testEnv(t)
	b := testMemory.Budget(10)
	h := &host{t: t}
	f := &Fill[*prog]{Host: h, Vars: parentVars(&b), At: -1}
	_, _, ok := f.Value(text("a long literal prefix ", compile(t, env, "parent.metadata.name")))
	if ok || len(h.failed) != 1 || !strings.HasPrefix(h.failed[0], "parent.metadata.name: "+errTestLimit.Error()) {
		t.Fatalf("Value() ok = %v, failures %q; want the budget's refusal naming the expression", ok, h.failed)
	}
	if b.Room() != 10 {
		t.Errorf("Room() = %d, want the refused string uncharged", b.Room())
	}
}

// TestBatchAgrees evaluates trees one expression at a time and through their batch,
// and compares.
func TestBatchAgrees(t *testing.T) {
	env := testEnv(t)
	c := func(src string) *prog { return compile(t, env, src) }
	trees := []*Node[*prog]{
		object("name", text(c("parent.metadata.name"), "-", c("each")), "spec", object("replicas", expr(c("parent.spec.replicas")), "tags", list(constant("x"), expr(c("parent.spec.tags[1]"))))),
		object("opt", expr(c("parent.spec.?missing")), "n", expr(c("each + \"!\""))),
	}
	src, n := BatchSource(trees...)
	if n != 6 {
		t.Fatalf("BatchSource() numbered %d expressions, want 6: %s", n, src)
	}
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		t.Fatalf("compile %s: %v", src, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	batch := NewBatch(prg)
	for _, tree := range trees {
		b := testMemory.Budget(1 << 20)
		vars := parentVars(&b)
		vars.Each = types.String("e")
		plain := &host{t: t}
		want, _, ok := (&Fill[*prog]{Host: plain, Vars: vars, At: 0}).Value(tree)
		if !ok {
			t.Fatalf("plain Value() failed: %v", plain.failed)
		}
		batched := &host{t: t}
		f := &Fill[*prog]{Host: batched, Vars: vars, At: 0, Batched: batch.Run(t.Context(), vars)}
		if f.Batched == nil {
			t.Fatal("Run() = nil for a batch that evaluates")
		}
		got, _, ok := f.Value(tree)
		if !ok || batched.evals != 0 {
			t.Fatalf("batched Value() ok = %v after %d evaluations, want ok and none", ok, batched.evals)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("batched value mismatch (-plain +batched):\n%s", diff)
		}
	}
}

func TestBatchSourceOfAFailedExpression(t *testing.T) {
	env := testEnv(t)
	tests := []struct {
		name string
		tree *Node[*prog]
	}{
		{name: "expression", tree: object("a", expr(compile(t, env, "1")), "b", expr(nil))},
		{name: "text part", tree: object("a", expr(compile(t, env, "1")), "b", &Node[*prog]{Kind: Text, Parts: []Part[*prog]{{Text: "x"}, {IsExpr: true}}})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if src, n := BatchSource(tt.tree); n != 0 || src != "" {
				t.Errorf("BatchSource() = %q, %d; want nothing for a tree with an expression that failed to compile", src, n)
			}
		})
	}
}

// TestBatchRunFailure checks that a failing batch asks for one-by-one evaluation and
// takes back what it charged.
func TestBatchRunFailure(t *testing.T) {
	env := testEnv(t)
	src, n := BatchSource(object("a", expr(compile(t, env, `parent.spec.tags.map(t, t + t)`)), "b", expr(compile(t, env, "1/0"))))
	if n != 2 {
		t.Fatalf("BatchSource() = %q, %d", src, n)
	}
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		t.Fatal(iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	b := testMemory.Budget(1 << 20)
	vars := parentVars(&b)
	if err := b.Charge(100, "before"); err != nil {
		t.Fatal(err)
	}
	if got := NewBatch(prg).Run(t.Context(), vars); got != nil {
		t.Errorf("Run() = %v, want nil for a failing batch", got)
	}
	if b.Room() != 1<<20-100 {
		t.Errorf("Room() = %d after a failed batch, want %d", b.Room(), 1<<20-100)
	}
	var none *Batch
	if got := none.Run(t.Context(), vars); got != nil {
		t.Errorf("nil Batch Run() = %v, want nil", got)
	}
}

func TestActivation(t *testing.T) {
	b := testMemory.Budget(1)
	a := &Activation{ParentObject: types.String("p"), Index: types.Int(2), Bytes: &b}
	tests := []struct {
		name  string
		want  any
		found bool
	}{
		{name: celenv.Parent, want: types.String("p"), found: true},
		{name: celenv.Index, want: types.Int(2), found: true},
		{name: celenv.Each, found: false},
		{name: "other", found: false},
	}
	for _, tt := range tests {
		got, found := a.ResolveName(tt.name)
		if found != tt.found || (found && got != tt.want) {
			t.Errorf("ResolveName(%q) = %v, %v; want %v, %v", tt.name, got, found, tt.want, tt.found)
		}
	}
	if a.Budget() != &b || a.Parent() != nil {
		t.Errorf("Budget() or Parent() do not return the activation's budget and no parent")
	}
}
