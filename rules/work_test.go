package rules

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// workCases are calls whose work is the product of their inputs' sizes, which a parent
// makes large: one uninterruptible call of seconds to hours (the deadline cannot stop
// it, and CEL counts its cost only after it returned).
func workCases() []growthCase {
	return []growthCase{
		// 3,000 distinct strings: 4.5 million comparisons.
		{name: "distinct", expr: `parent.spec.items.distinct().size()`, spec: map[string]any{"items": stringItems(3000)}},
		// Each of 3,000 elements looked up in 3,000: 9 million.
		{name: "sets.contains", expr: `sets.contains(parent.spec.items, parent.spec.items)`, spec: map[string]any{"items": stringItems(3000)}},
		{name: "sets.equivalent", expr: `sets.equivalent(parent.spec.items, parent.spec.items)`, spec: map[string]any{"items": stringItems(3000)}},
		// A needle of 20,000 a's and a b in 100,000 a's: 2 billion character comparisons.
		{name: "indexOf", expr: `parent.spec.s.indexOf(parent.spec.sub)`,
			spec: map[string]any{"s": strings.Repeat("a", 100_000), "sub": strings.Repeat("a", 20_000) + "b"}},
		{name: "lastIndexOf", expr: `parent.spec.s.lastIndexOf(parent.spec.sub)`,
			spec: map[string]any{"s": strings.Repeat("a", 100_000), "sub": strings.Repeat("a", 20_000) + "b"}},
	}
}

// TestQuadraticWorkIsRefused: such a call is refused before it starts, as the cost limit
// refuses an expression, named by rule, child, field and expression; the evaluation does
// next to nothing (before, the same calls ran for seconds, and allocated hundreds of
// megabytes looking elements up).
func TestQuadraticWorkIsRefused(t *testing.T) {
	for _, tt := range workCases() {
		t.Run(tt.name, func(t *testing.T) {
			r := loadRule(t, growthRule(tt.expr, "x"), Options{EvalTimeout: relaxed})
			var err error
			allocated := allocatedBy(func() { _, err = r.Evaluate(t.Context(), webApp(tt.spec), nil) })
			if !errors.Is(err, ErrCostLimit) {
				t.Fatalf("Evaluate() error = %.300v, want ErrCostLimit", err)
			}
			want := []errView{{Rule: "growth", Child: "page", Field: "template.spec.v", Expr: "${" + tt.expr + "}",
				Message: "cost limit exceeded: the expression did more work than its limit allows; iterate over fewer elements"}}
			if diff := cmp.Diff(want, viewErrors(t, err, want)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			t.Logf("refused after allocating %d KiB", allocated>>10)
			if allocated > 8<<20 {
				t.Errorf("the evaluation allocated %d MiB", allocated>>20)
			}
		})
	}
}

// TestQuadraticWorkWithinTheLimit: the same functions over small inputs give CEL's
// results.
func TestQuadraticWorkWithinTheLimit(t *testing.T) {
	tests := []struct {
		expr string
		want any
	}{
		{`["a", "b", "a"].distinct()`, []any{"a", "b"}},
		{`sets.contains(["a", "b"], ["b"])`, true},
		{`sets.intersects(["a"], ["b"])`, false},
		{`sets.equivalent(["a", "b"], ["b", "a", "a"])`, true},
		{`"abcabc".indexOf("ca")`, int64(2)},
		{`"abcabc".lastIndexOf("bc")`, int64(4)},
		{`"abc".indexOf("c", 1)`, int64(2)},
		{`[1, 2, 3].indexOf(2)`, int64(1)},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			r := loadRule(t, growthRule(tt.expr, "x"), Options{EvalTimeout: relaxed})
			res, err := r.Evaluate(t.Context(), webApp(nil), nil)
			if err != nil {
				t.Fatalf("Evaluate(): %v", err)
			}
			spec, _ := res.Children[0].Object["spec"].(map[string]any)
			if diff := cmp.Diff(tt.want, spec["v"]); diff != "" {
				t.Errorf("spec.v (-want +got):\n%s", diff)
			}
		})
	}
}
