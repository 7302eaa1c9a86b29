package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

// selectedRule makes one ConfigMap for each widget labelled pick=on.
const selectedRule = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: %s
    parent:
      apiVersion: engine.kubecel.dev/v1
      resource: widgets
      namespaces: [%s]
      selector: {matchLabels: {pick: "on"}}
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name + '-picked'}"}
          data: {value: "${parent.spec.value}"}
`

// TestParentRelabelledOutWhileStopped: a widget is relabelled out of the rule's
// selector while no controller runs. The controller that starts next must release it:
// its child goes. Only the child tells that the widget was the rule's (the rule's
// parent cache does not hold it); the child's events, when they arrive before the rule
// is published, queue nothing (the test holds the publish until they have), so the
// start must queue the parents its children name. Before the fix the child stayed
// until something else touched it.
func TestParentRelabelledOutWhileStopped(t *testing.T) {
	ns := testenv.Namespace(t)
	rule := fmt.Sprintf("picked-%04x", rand.IntN(1<<16))
	rs, err := rules.Load(fmt.Appendf(nil, selectedRule, rule, ns), rules.Options{EvalTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// start runs a controller until the test ends; the function it returns stops it
	// and waits until it has.
	start := func(hold bool) func() {
		c, err := New(testenv.Config(t), Options{Identity: testIdentity})
		if err != nil {
			t.Fatal(err)
		}
		if hold {
			c.life.started = func(st *watch.Rule) {
				testenv.Eventually(t, 30*time.Second, func() (bool, string) {
					return st.Synced(), "the rule's caches have not synced"
				})
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		c.SetRules(ctx, rs)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = c.Run(ctx)
		}()
		stop := func() {
			cancel()
			<-done
		}
		t.Cleanup(stop)
		return stop
	}

	stop := start(false)
	widgets := testenv.Dynamic(t).Resource(widgetGVR).Namespace(ns)
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "engine.kubecel.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": ns, "labels": map[string]any{"pick": "on"}},
		"spec":     map[string]any{"value": "one"},
	}}
	if _, err := widgets.Create(t.Context(), w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	configMaps := testenv.Kube(t).CoreV1().ConfigMaps(ns)
	testenv.Eventually(t, 60*time.Second, func() (bool, string) {
		_, err := configMaps.Get(t.Context(), "w-picked", metav1.GetOptions{})
		return err == nil, fmt.Sprintf("child w-picked: %v", err)
	})
	stop()

	patch := []byte(`{"metadata":{"labels":{"pick":null}}}`)
	if _, err := widgets.Patch(t.Context(), "w", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	start(true)
	testenv.Eventually(t, 60*time.Second, func() (bool, string) {
		_, err := configMaps.Get(t.Context(), "w-picked", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("child w-picked of the released widget: %v", err)
	})
}
