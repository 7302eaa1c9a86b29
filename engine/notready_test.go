package engine_test

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// TestParentsNotReadyGauge: kubecel_parents_not_ready counts a parent whose reconcile
// found it not Ready (here its evaluation fails, which kubecel_reconcile_errors_total
// counts by reason), and stops counting it once it is Ready and once it is deleted; the
// rule's series stays, at 0.
func TestParentsNotReadyGauge(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := startControllerWith(t, evalErrorRules, rules.Options{}, engine.Options{Workers: 2, Registry: reg})
	notReady := func(want float64) {
		t.Helper()
		f.eventually(func() (bool, string) {
			n, ok := testenv.Gauge(t, reg, "kubecel_parents_not_ready", "rule", f.rule)
			oldest, _ := testenv.Gauge(t, reg, "kubecel_parents_not_ready_oldest_seconds", "rule", f.rule)
			return ok && n == want && (oldest > 0) == (want > 0),
				fmt.Sprintf("kubecel_parents_not_ready %v (series %v), oldest %vs; want %v", n, ok, oldest, want)
		})
	}
	f.create(widgets, widget(f.ns, "n", map[string]any{"divisor": int64(0)}))
	notReady(1)
	// The failed reconcile is counted with its reason.
	if n := testenv.Counter(t, reg, "kubecel_reconcile_errors_total", "reason", contract.ReasonEvaluationFailed); n < 1 {
		t.Errorf("kubecel_reconcile_errors_total{reason=%q} = %v, want at least 1", contract.ReasonEvaluationFailed, n)
	}
	f.patchSpec(widgets, f.ns, "n", `{"divisor":5}`)
	notReady(0)
	f.patchSpec(widgets, f.ns, "n", `{"divisor":0}`)
	notReady(1)
	f.deleteWidget("n", metav1.DeletePropagationBackground)
	notReady(0)
}
