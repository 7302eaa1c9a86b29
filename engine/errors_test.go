package engine_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

const evalErrorRules = widgetRuleHead + `      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
          data: {size: "${string(100 / parent.spec.divisor)}"}
    status:
      fields:
        divisor: ${parent.spec.divisor}
`

func TestEvaluationErrorBecomesSyncedFalse(t *testing.T) {
	f := startController(t, evalErrorRules)
	f.create(widgets, widget(f.ns, "e", map[string]any{"divisor": int64(4)}))
	f.waitFor(configMaps, f.ns, "e", nil)

	f.patchSpec(widgets, f.ns, "e", `{"divisor":0}`)
	f.waitFor(widgets, f.ns, "e", func(o *unstructured.Unstructured) (bool, string) {
		status, reason, msg := testenv.Condition(o, contract.ConditionSynced)
		return status == "False" && reason == contract.ReasonEvaluationFailed &&
				strings.Contains(msg, `child "config"`) && strings.Contains(msg, "division by zero"),
			fmt.Sprintf("Synced=%s %s %q", status, reason, msg)
	})
	f.waitIdle()
	// The failed evaluation pruned nothing, and the parent is not retried in a loop.
	if _, err := f.get(configMaps, f.ns, "e"); err != nil {
		t.Errorf("child removed after an evaluation error: %v", err)
	}
	before := testenv.Writes(t, func(e controlplane.AuditEvent) bool { return e.ObjectRef.Namespace == f.ns })
	f.ctrl.EnqueueAll()
	f.waitIdle()
	if after := testenv.Writes(t, func(e controlplane.AuditEvent) bool { return e.ObjectRef.Namespace == f.ns }); after != before {
		t.Errorf("re-reconciling a parent in the same error state sent %d writes, want 0", after-before)
	}

	f.patchSpec(widgets, f.ns, "e", `{"divisor":5}`)
	f.waitFor(configMaps, f.ns, "e", func(o *unstructured.Unstructured) (bool, string) {
		return nestedString(o, "data", "size") == "20", "size not 20"
	})
	f.waitFor(widgets, f.ns, "e", func(o *unstructured.Unstructured) (bool, string) {
		status, _, msg := testenv.Condition(o, contract.ConditionSynced)
		return status == "True", fmt.Sprintf("Synced=%s %q", status, msg)
	})
}

const plainRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: {{.Rule}}
    parent:
      apiVersion: engine.kubecel.dev/v1
      resource: plainwidgets
      namespaces: [{{.NS}}]
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
    status:
      fields:
        name: ${parent.metadata.name}
`

func TestMissingStatusSubresourceIsReportedOnce(t *testing.T) {
	f := startController(t, plainRules)
	parent := f.create(plainWidgets, map[string]any{
		"apiVersion": "engine.kubecel.dev/v1", "kind": "PlainWidget",
		"metadata": map[string]any{"name": "p", "namespace": f.ns}, "spec": map[string]any{},
	})
	f.waitFor(configMaps, f.ns, "p", nil)
	var events []corev1.Event
	f.eventually(func() (bool, string) {
		list, err := testenv.Kube(t).CoreV1().Events(f.ns).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=StatusNotWritable"})
		if err != nil {
			return false, err.Error()
		}
		events = list.Items
		return len(events) > 0, "no StatusNotWritable event"
	})
	if !strings.Contains(events[0].Message, "no status subresource") {
		t.Errorf("event message %q does not explain the missing status subresource", events[0].Message)
	}
	f.ctrl.EnqueueAll()
	f.waitIdle()
	got, err := f.get(plainWidgets, f.ns, "p")
	if err != nil {
		t.Fatal(err)
	}
	if got.GetGeneration() != parent.GetGeneration() {
		t.Errorf("generation moved from %d to %d: status writes must not loop through the main resource", parent.GetGeneration(), got.GetGeneration())
	}
	if events[0].Count > 1 {
		t.Errorf("StatusNotWritable recorded %d times, want once", events[0].Count)
	}
}

// slowRules has an expression that checks the evaluation deadline at every step of its
// comprehension; with a deadline of a nanosecond, every evaluation runs out of time.
const slowRules = widgetRuleHead + `      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
          data: {multiples: "${string(lists.range(1000).filter(i, i % 7 == 0).size())}"}
    status:
      fields:
        name: ${parent.metadata.name}
`

// An evaluation stopped by the deadline depends on how busy the machine is, unlike a
// type error or the cost limit: it is reported, and retried with the queue's backoff
// (seen on a loaded 2-core machine, where a 100 ms deadline stopped a trivial rule).
func TestEvaluationDeadlineIsRetried(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := startControllerWith(t, slowRules, rules.Options{EvalTimeout: time.Nanosecond}, engine.Options{Workers: 2, Registry: reg})
	f.create(widgets, widget(f.ns, "slow", map[string]any{}))
	f.waitFor(widgets, f.ns, "slow", func(o *unstructured.Unstructured) (bool, string) {
		status, reason, msg := testenv.Condition(o, contract.ConditionSynced)
		return status == "False" && reason == contract.ReasonEvaluationFailed && strings.Contains(msg, "deadline"),
			fmt.Sprintf("Synced=%s %s %q", status, reason, msg)
	})
	// Nothing changes the widget any more: only retries reconcile it again.
	first := testenv.Counter(t, reg, "kubecel_reconcile_total", "result", "error")
	f.eventually(func() (bool, string) {
		n := testenv.Counter(t, reg, "kubecel_reconcile_total", "result", "error")
		return n >= first+3, fmt.Sprintf("%v failed reconciles, %v when reported", n, first)
	})
	if _, err := f.get(configMaps, f.ns, "slow"); err == nil {
		t.Error("the child was applied although its evaluation never finished")
	}
}
