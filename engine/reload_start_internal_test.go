package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

// addedRule is a second rule on the widgets of panicRules, whose child has a name of
// its own.
const addedRule = `  - name: %s
    parent:
      apiVersion: engine.kubecel.dev/v1
      resource: widgets
      namespaces: [%s]
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name + '-added'}"}
          data: {value: "${parent.spec.value}"}
`

// TestRuleAddedBesideARunningOne: a reload adds a rule on a resource another rule
// already watches. Its parents are queued as its watch starts, before the rule is in
// the view the workers read; here a worker takes the parent in that window (the test
// holds the reload until it has) and finds no rule. The parent must still be reconciled
// by the rule once it runs (before the fix, it waited for the next change or resync).
func TestRuleAddedBesideARunningOne(t *testing.T) {
	c, err := New(testenv.Config(t), Options{Identity: testIdentity})
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t)
	suffix := fmt.Sprintf("%04x", rand.IntN(1<<16))
	steady, added := "steady-"+suffix, "added-"+suffix
	load := func(withAdded bool) *rules.RuleSet {
		t.Helper()
		text := fmt.Sprintf(panicRules, steady, ns)
		if withAdded {
			text += fmt.Sprintf(addedRule, added, ns)
		}
		rs, err := rules.Load([]byte(text), rules.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.SetRules(ctx, load(false))
	taken := make(chan struct{}, 1)
	c.testHook = func(k queueKey) {
		if k.Rule == added {
			select {
			case taken <- struct{}{}:
			default:
			}
		}
	}
	runInBackground(t, c, ctx, cancel)

	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "engine.kubecel.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": ns},
		"spec":     map[string]any{"value": "one"},
	}}
	if _, err := testenv.Dynamic(t).Resource(widgetGVR).Namespace(ns).Create(t.Context(), w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	child := func(name string) func() (bool, string) {
		return func() (bool, string) {
			cm, err := testenv.Kube(t).CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return cm.Data["value"] == "one", fmt.Sprintf("child %s value = %q, want %q", name, cm.Data["value"], "one")
		}
	}
	testenv.Eventually(t, 60*time.Second, child("w"))

	// The added rule has started its watch but is not in the view yet: wait until a
	// worker took its parent.
	held := false
	c.life.started = func(st *watch.Rule) {
		if st.Name() != added {
			return
		}
		select {
		case <-taken:
			held = true
		case <-time.After(30 * time.Second):
		}
	}
	c.SetRules(ctx, load(true))
	if !held {
		t.Fatal("no worker took the added rule's parent before the rule was published: the test exercised nothing")
	}
	testenv.Eventually(t, 60*time.Second, child("w-added"))
}
