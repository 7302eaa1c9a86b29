package rules

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkEvaluate evaluates the three-child rule of the rules reference (a Deployment, a Service
// that reads it, and one ConfigMap per env with forEach) for a parent with three envs,
// with every child observed and ready: the steady state of a reconcile.
func BenchmarkEvaluate(b *testing.B) {
	r := loadRule(b, webappRule, Options{})
	parent := webApp(map[string]any{
		"image": "nginx:1.27", "replicas": int64(2), "expose": true,
		"envs": []any{
			map[string]any{"name": "dev", "values": map[string]any{"LOG": "debug"}},
			map[string]any{"name": "stage", "values": map[string]any{"LOG": "info"}},
			map[string]any{"name": "prod", "values": map[string]any{"LOG": "warn"}},
		},
	})
	observed := Observed{
		"deployment": {deployment(2)},
		"service":    {object("v1", "Service", "shop", nil)},
		"config":     {configMap("shop-dev", nil), configMap("shop-stage", nil), configMap("shop-prod", nil)},
	}
	res, err := r.Evaluate(b.Context(), parent, observed)
	if err != nil || !res.Ready || len(res.Children) != 5 {
		b.Fatalf("Evaluate() = %+v, %v; want 5 ready children", res, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Evaluate(b.Context(), parent, observed); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvaluateForEach1000 evaluates a forEach child of 1,000 ConfigMaps with every
// object observed: a large parent's reconcile (matching each desired object with its
// observed one was a scan of all of them before the index of observed objects).
func BenchmarkEvaluateForEach1000(b *testing.B) {
	r := loadRule(b, strings.Replace(manyRule, "lists.range(40)", "lists.range(1000)", 1), Options{})
	observed := make([]map[string]any, 0, 1000)
	for i := range 1000 {
		observed = append(observed, configMap(fmt.Sprintf("part-%d", i), map[string]any{"ok": "yes"}))
	}
	obs := Observed{"part": observed}
	b.ReportAllocs()
	for b.Loop() {
		res, err := r.Evaluate(b.Context(), webApp(nil), obs)
		if err != nil || len(res.Children) != 1000 || !res.Ready {
			b.Fatalf("Evaluate() = %d children, ready %v, %v", len(res.Children), res.Ready, err)
		}
	}
}

// BenchmarkGrowthRefused evaluates each growth case of TestGrowthIsRefused, under the
// tests' budget of 1 MiB: how long the refusal takes and what the evaluation allocates
// (B/op) when the expression asks for hundreds of megabytes.
func BenchmarkGrowthRefused(b *testing.B) {
	for _, tt := range growthCases() {
		b.Run(tt.name, func(b *testing.B) {
			r := loadRule(b, growthRule(tt.expr, tt.text), Options{MaxEvalBytes: testBudget, EvalTimeout: time.Minute})
			parent := webApp(tt.spec)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Evaluate(b.Context(), parent, nil); !errors.Is(err, ErrMemoryLimit) {
					b.Fatalf("Evaluate() error = %.200v, want ErrMemoryLimit", err)
				}
			}
		})
	}
}

// BenchmarkGrowthBomb evaluates the reported bomb with the default limits: a 100 KB
// parent whose rule's replace would build a 312 MB string.
func BenchmarkGrowthBomb(b *testing.B) {
	r := loadRule(b, greetingRule, Options{})
	bomb := webApp(map[string]any{"template": strings.Repeat("{{name}}", 6250), "name": strings.Repeat("n", 50_000)})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Evaluate(b.Context(), bomb, nil); !errors.Is(err, ErrMemoryLimit) {
			b.Fatalf("Evaluate() error = %.200v, want ErrMemoryLimit", err)
		}
	}
}

// BenchmarkQuadraticWorkRefused evaluates each case of TestQuadraticWorkIsRefused: how
// long the refusal takes.
func BenchmarkQuadraticWorkRefused(b *testing.B) {
	for _, tt := range workCases() {
		b.Run(tt.name, func(b *testing.B) {
			r := loadRule(b, growthRule(tt.expr, "x"), Options{EvalTimeout: time.Minute})
			parent := webApp(tt.spec)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Evaluate(b.Context(), parent, nil); !errors.Is(err, ErrCostLimit) {
					b.Fatalf("Evaluate() error = %.200v, want ErrCostLimit", err)
				}
			}
		})
	}
}
