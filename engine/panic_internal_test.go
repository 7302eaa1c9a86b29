package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

const panicRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: %s
    parent:
      apiVersion: engine.kubecel.dev/v1
      resource: widgets
      namespaces: [%s]
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
          data: {value: "${parent.spec.value}"}
    status:
      fields: {value: "${parent.spec.value}"}
`

var widgetGVR = schema.GroupVersionResource{Group: "engine.kubecel.dev", Version: "v1", Resource: "widgets"}

// TestReconcilePanic: a reconcile that panics (here before it reads its parent) costs
// that parent a retry, not the process. The panic is counted and logged once with its
// stack, the parent shows Synced=False ReconcilePanic and a Warning Event, the single
// worker goes on with other parents, and once the bug is gone the backoff brings the
// parent back and it converges, with no event of its own.
func TestReconcilePanic(t *testing.T) {
	c, err := New(testenv.Config(t), Options{Identity: testIdentity})
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t)
	c.opts.Workers = 1
	// A rule name of its own: a rule's name is what its children carry, so another
	// controller with the same rule would take them for its own.
	rule := fmt.Sprintf("panicky-%04x", rand.IntN(1<<16))
	var panicking atomic.Bool
	var panics atomic.Int64
	panicking.Store(true)
	c.testHook = func(k queueKey) {
		if k.Namespace == ns && k.Name == "bad" && panicking.Load() {
			panics.Add(1)
			panic("test panic")
		}
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	rs, err := rules.Load(fmt.Appendf(nil, panicRules, rule, ns), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.SetRules(ctx, rs)
	runInBackground(t, c, ctx, cancel)

	create := func(name string) {
		w := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "engine.kubecel.dev/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"value": name + "-value"},
		}}
		if _, err := testenv.Dynamic(t).Resource(widgetGVR).Namespace(ns).Create(t.Context(), w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// waitWidget waits until the widget's Ready and Synced conditions are as wanted.
	waitWidget := func(name, ready, synced, reason, msg string) {
		t.Helper()
		testenv.Eventually(t, 60*time.Second, func() (bool, string) {
			w, err := testenv.Dynamic(t).Resource(widgetGVR).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			rs, _, _ := testenv.Condition(w, contract.ConditionReady)
			ss, sr, sm := testenv.Condition(w, contract.ConditionSynced)
			return rs == ready && ss == synced && sr == reason && strings.Contains(sm, msg),
				fmt.Sprintf("%s: Ready=%s Synced=%s %s %q", name, rs, ss, sr, sm)
		})
	}
	converged := func(name string) {
		t.Helper()
		waitWidget(name, "True", "True", contract.ReasonSynced, "")
		cm, err := testenv.Kube(t).CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil || cm.Data["value"] != name+"-value" {
			t.Errorf("child of %s: %v, %v", name, cm.Data, err)
		}
	}

	create("bad")
	waitWidget("bad", "Unknown", "False", contract.ReasonReconcilePanic, "test panic")
	testenv.Eventually(t, 60*time.Second, func() (bool, string) {
		events, err := testenv.Kube(t).CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{
			FieldSelector: "involvedObject.name=bad,reason=" + contract.ReasonReconcilePanic + ",type=Warning"})
		if err != nil {
			return false, err.Error()
		}
		return len(events.Items) == 1 && strings.Contains(events.Items[0].Message, "test panic"),
			fmt.Sprintf("%d ReconcilePanic Events on bad", len(events.Items))
	})

	// The one worker survived: another parent converges while bad still panics.
	create("good")
	converged("good")

	// The bug is fixed: nothing changes bad, only its backoff brings it back.
	panicking.Store(false)
	converged("bad")

	n := float64(panics.Load())
	if got := testenv.Counter(t, c.opts.Registry, "kubecel_reconcile_panics_total", "rule", rule); n < 1 || got != n {
		t.Errorf("kubecel_reconcile_panics_total = %v, want the %v panics of the hook", got, n)
	}
	if got := testenv.Counter(t, c.opts.Registry, "kubecel_reconcile_total", "result", "error"); got < n {
		t.Errorf(`kubecel_reconcile_total{result="error"} = %v, want at least the %v panics`, got, n)
	}
	// Each panic was logged once, with its stack, and bad had no other failure logged.
	var logged int
	for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		if e.Type != ktesting.LogError || !hasKV(e.WithKVList, "parent", ns+"/bad") {
			continue
		}
		if e.Message != "Reconcile panicked" {
			t.Errorf("bad: unexpected error log %q: %v", e.Message, e.Err)
			continue
		}
		logged++
		if !hasKVContaining(e.ParameterKVList, "stack", "panic_internal_test.go") {
			t.Errorf("panic logged without the stack of the panic: %v", e.ParameterKVList)
		}
	}
	if float64(logged) != n {
		t.Errorf("%d panics logged, want %v (one per panic)", logged, n)
	}
}

// hasKV reports whether the key/value list has key with value.
func hasKV(kvs []any, key, value string) bool {
	for i := 0; i+1 < len(kvs); i += 2 {
		if kvs[i] == key {
			return kvs[i+1] == value
		}
	}
	return false
}

// hasKVContaining reports whether the key/value list has key with a string value
// containing sub.
func hasKVContaining(kvs []any, key, sub string) bool {
	for i := 0; i+1 < len(kvs); i += 2 {
		if kvs[i] == key {
			s, ok := kvs[i+1].(string)
			return ok && strings.Contains(s, sub)
		}
	}
	return false
}

// runInBackground runs c until the test ends, then cancels ctx and waits for Run to
// return.
func runInBackground(t *testing.T, c *Controller, ctx context.Context, cancel context.CancelFunc) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}
