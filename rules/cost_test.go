package rules

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// runawayRule nests comprehensions over a list whose size the parent decides: the
// static estimate cannot bound it, so only the runtime limits can stop it. The parent has
// no schema, so that its data can hold a list.
const runawayRule = `- name: runaway
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: cm
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: x}
      data:
        count: ${string(parent.data.items.map(a, parent.data.items.map(b, parent.data.items.map(c, a + b + c))).size())}
`

func runawayParent(n int) map[string]any {
	items := make([]any, n)
	for i := range items {
		items[i] = int64(i)
	}
	return map[string]any{"apiVersion": "example.com/v1", "kind": "WebApp", "metadata": map[string]any{"name": "p"}, "data": map[string]any{"items": items}}
}

func TestRunawayExpressionStopsAtTheCostLimit(t *testing.T) {
	// A long deadline, so that the cost limit is what stops it.
	r := loadRule(t, runawayRule, Options{EvalTimeout: time.Minute})
	res, err := r.Evaluate(t.Context(), runawayParent(1000), nil)
	if !errors.Is(err, ErrCostLimit) {
		t.Fatalf("Evaluate() error = %v, want ErrCostLimit", err)
	}
	want := []errView{{
		Rule: "runaway", Child: "cm", Field: "template.data.count",
		Expr:    "${string(parent.data.items.map(a, parent.data.items.map(b, parent.data.items.map(c, a + b + c))).size())}",
		Message: "cost limit exceeded: the expression did more work than its limit allows; iterate over fewer elements",
	}}
	if diff := cmp.Diff(want, viewErrors(t, err, want)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"cm"}, res.Failed); diff != "" || len(res.Children) != 0 {
		t.Errorf("Failed (-want +got):\n%s\nChildren: %v", diff, res.Children)
	}

	// A small list evaluates fine under the same rule.
	if _, err := r.Evaluate(t.Context(), runawayParent(3), nil); err != nil {
		t.Errorf("Evaluate() on 3 items: %v", err)
	}
}

func TestRunawayExpressionStopsWithDefaultLimits(t *testing.T) {
	r := loadRule(t, runawayRule, Options{})
	_, err := r.Evaluate(t.Context(), runawayParent(1000), nil)
	if !errors.Is(err, ErrCostLimit) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Evaluate() error = %v, want the cost limit or the deadline", err)
	}
}

func TestRunawayExpressionStopsAtTheDeadline(t *testing.T) {
	r := loadRule(t, runawayRule, Options{CostLimit: 1 << 62, EvalTimeout: 5 * time.Millisecond})
	_, err := r.Evaluate(t.Context(), runawayParent(1000), nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Evaluate() error = %v, want context.DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), `rule "runaway" child "cm": template.data.count: ${string(parent.data.items.map(`) ||
		!strings.Contains(err.Error(), "evaluation stopped after the 5ms deadline") {
		t.Errorf("error does not name the expression and the deadline: %v", err)
	}
}

func TestCostLimitOption(t *testing.T) {
	rule := `- name: costly
  parent: {apiVersion: v1, resource: configmaps}
  status:
    fields:
      n: ${[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(a, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(b, a * b)).size()}
`
	if _, err := Load(ruleFile(rule), Options{}); err != nil {
		t.Fatalf("Load() with the default limit: %v", err)
	}
	_, err := Load(ruleFile(rule), Options{CostLimit: 100})
	if err == nil || !strings.Contains(err.Error(), "exceeds the limit 100") {
		t.Fatalf("Load() with a limit of 100 = %v, want the estimate over the limit", err)
	}
}

func TestSizeEstimatorUsesSchemaBounds(t *testing.T) {
	schemas := testSchemas(t)
	load := func(expr string) error {
		_, err := Load(ruleFile(`- name: s
  parent: {apiVersion: example.com/v1, resource: webapps}
  status: {fields: {x: "${`+expr+`}"}}
`), Options{Schemas: schemas, CostLimit: 100_000})
		return err
	}
	tests := []struct {
		expr string
		ok   bool
	}{
		// envs has maxItems 20: a nested comprehension costs about 12,000.
		{"parent.spec.envs.map(a, parent.spec.envs.map(b, a.name + b.name)).size()", true},
		// matrix has maxItems 5000: one pass costs about 75,000; two nested, millions.
		{"parent.spec.matrix.filter(a, a.startsWith('x')).size()", true},
		{"parent.spec.matrix.map(a, parent.spec.matrix.map(b, a + b)).size()", false},
		// hosts is unbounded: left to the runtime limit.
		{"parent.spec.hosts.map(a, parent.spec.hosts.map(b, a + b)).size()", true},
	}
	for _, tt := range tests {
		if err := load(tt.expr); (err == nil) != tt.ok {
			t.Errorf("Load(%s): err = %v, want ok %v", tt.expr, err, tt.ok)
		}
	}
}
