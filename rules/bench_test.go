package rules

import "testing"

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
