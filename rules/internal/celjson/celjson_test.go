package celjson

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/go-cmp/cmp"

	"github.com/kubecel/kubecel/rules/internal/celbudget"
)

var errTestLimit = errors.New("test memory limit exceeded")

var testMemory = celbudget.Memory{Exceeded: errTestLimit, Default: 1 << 20}

// eval evaluates expr with x bound to Value(x).
func eval(t *testing.T, expr string, x any) ref.Val {
	t.Helper()
	env, err := cel.NewEnv(cel.Variable("x", cel.DynType), cel.OptionalTypes())
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatalf("compile %q: %v", expr, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := prg.Eval(map[string]any{"x": Value(x)})
	if err != nil {
		t.Fatalf("eval %q: %v", expr, err)
	}
	return out
}

func TestToJSON(t *testing.T) {
	parent := map[string]any{"spec": map[string]any{"b": int64(2), "a": "one", "list": []any{true, nil, 1.5}}}
	tests := []struct {
		expr    string
		want    any
		wantErr string
	}{
		{expr: `"text"`, want: "text"},
		{expr: `42`, want: int64(42)},
		{expr: `42u`, want: int64(42)},
		{expr: `18446744073709551615u`, wantErr: "does not fit in an int64"},
		{expr: `1.5`, want: 1.5},
		{expr: `1.0/0.0`, wantErr: "is not a JSON number"},
		{expr: `true`, want: true},
		{expr: `null`, want: nil},
		{expr: `b"hi"`, want: "aGk="},
		{expr: `timestamp("2026-01-02T03:04:05Z")`, want: "2026-01-02T03:04:05Z"},
		{expr: `duration("90s")`, want: "1m30s"},
		{expr: `optional.of(1)`, wantErr: "an optional value cannot be stored"},
		{expr: `{"k": [1, "two"], "m": {"n": null}}`, want: map[string]any{"k": []any{int64(1), "two"}, "m": map[string]any{"n": nil}}},
		{expr: `{1: "one"}`, wantErr: "map key 1 is a int; JSON object keys are strings"},
		{expr: `x.spec`, want: parent["spec"]},
		{expr: `x.spec.list + [x.spec.a]`, want: []any{true, nil, 1.5, "one"}},
		{expr: `x.spec.map(k, k)`, want: []any{"a", "b", "list"}},
		{expr: `type(1)`, want: "int"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			b := testMemory.Budget(1 << 20)
			got, err := ToJSON(eval(t, tt.expr, parent), &b)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ToJSON() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ToJSON() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ToJSON() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestToJSONCopiesInputs checks that a value read from the input is copied, so that a
// manifest never shares a map with the parent.
func TestToJSONCopiesInputs(t *testing.T) {
	spec := map[string]any{"a": "one"}
	b := testMemory.Budget(1 << 20)
	got, err := ToJSON(eval(t, "x.spec", map[string]any{"spec": spec}), &b)
	if err != nil {
		t.Fatal(err)
	}
	got.(map[string]any)["a"] = "changed"
	if spec["a"] != "one" {
		t.Errorf("changing the result changed the input: %v", spec)
	}
}

func TestToJSONBudget(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name string
		v    ref.Val
	}{
		{name: "string", v: types.String(long)},
		{name: "copied input", v: Value(map[string]any{"k": long})},
		{name: "list literal", v: eval(t, `[x, x]`, long)},
		{name: "bytes", v: types.Bytes(long)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := testMemory.Budget(50)
			_, err := ToJSON(tt.v, &b)
			if !errors.Is(err, errTestLimit) {
				t.Errorf("ToJSON() error = %v, want the budget's refusal", err)
			}
			if scalar := tt.name == "string" || tt.name == "bytes"; scalar && b.Room() != 50 {
				t.Errorf("Room() = %d after a refusal of the first charge, want 50", b.Room())
			}
		})
	}
}

func TestToJSONDepth(t *testing.T) {
	var v any = "leaf"
	for range MaxDepth + 1 {
		v = []any{v}
	}
	b := testMemory.Budget(1 << 20)
	if _, err := ToJSON(Value(v), &b); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("ToJSON() error = %v, want the depth limit", err)
	}
	if _, err := CopyJSON(v, &b); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("CopyJSON() error = %v, want the depth limit", err)
	}
}

func TestCopyJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      any
		want    any
		wantErr string
	}{
		{name: "nested", in: map[string]any{"a": []any{int64(1), "s", true, nil}}, want: map[string]any{"a": []any{int64(1), "s", true, nil}}},
		{name: "go numbers", in: []any{1, int32(2), float32(0.5)}, want: []any{int64(1), int64(2), 0.5}},
		{name: "NaN", in: math.NaN(), wantErr: "is not a JSON number"},
		{name: "struct", in: struct{}{}, wantErr: "unsupported value of Go type struct {}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := testMemory.Budget(1 << 20)
			got, err := CopyJSON(tt.in, &b)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("CopyJSON() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CopyJSON() mismatch (-want +got):\n%s", diff)
			}
			if b.Room() == 1<<20 {
				t.Errorf("CopyJSON() charged nothing")
			}
		})
	}
}

func TestToText(t *testing.T) {
	tests := []struct {
		expr    string
		want    string
		wantErr string
	}{
		{expr: `"s"`, want: "s"},
		{expr: `-3`, want: "-3"},
		{expr: `3u`, want: "3"},
		{expr: `0.25`, want: "0.25"},
		{expr: `false`, want: "false"},
		{expr: `duration("1h")`, want: "3600s"},
		{expr: `null`, wantErr: "cannot interpolate null_type into a string"},
		{expr: `[1]`, wantErr: "cannot interpolate list into a string"},
		{expr: `optional.none()`, wantErr: "convert it first"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			got, err := ToText(eval(t, tt.expr, nil))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ToText() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ToText() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestMapIteratesInKeyOrder(t *testing.T) {
	m := map[string]any{}
	for _, k := range []string{"d", "b", "a", "c", "e"} {
		m[k] = k
	}
	for range 5 {
		var keys []string
		it := Value(m).(traits.Mapper).Iterator()
		for it.HasNext() == types.True {
			keys = append(keys, string(it.Next().(types.String)))
		}
		if diff := cmp.Diff([]string{"a", "b", "c", "d", "e"}, keys); diff != "" {
			t.Fatalf("keys mismatch (-want +got):\n%s", diff)
		}
	}
}

func TestMapEqualAndFind(t *testing.T) {
	a := Value(map[string]any{"k": []any{int64(1)}, "s": "v"})
	tests := []struct {
		name  string
		other ref.Val
		want  ref.Val
	}{
		{name: "same content", other: Value(map[string]any{"s": "v", "k": []any{int64(1)}}), want: types.True},
		{name: "other value", other: Value(map[string]any{"s": "w", "k": []any{int64(1)}}), want: types.False},
		{name: "fewer keys", other: Value(map[string]any{"s": "v"}), want: types.False},
		{name: "not a map", other: types.String("v"), want: types.False},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := a.Equal(tt.other); got != tt.want {
				t.Errorf("Equal() = %v, want %v", got, tt.want)
			}
		})
	}
	m := a.(traits.Mapper)
	if _, found := m.Find(types.Int(1)); found {
		t.Errorf("Find(1) found a value for a non-string key")
	}
	if got := m.Get(types.String("missing")); !types.IsError(got) || !strings.Contains(got.(*types.Err).String(), "no such key: missing") {
		t.Errorf("Get(missing) = %v, want no such key", got)
	}
	if got := m.Contains(types.String("s")); got != types.True {
		t.Errorf("Contains(s) = %v", got)
	}
}
