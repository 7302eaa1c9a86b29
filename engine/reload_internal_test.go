package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

// TestReloadDoesNotStopUnchangedRules: while a reload starts its new rules (here held
// in the middle, as a reload of many rules would be), the rules it leaves unchanged go
// on: an edit of their parent reaches its child before the reload ends. Workers read
// the running rules without a lock the reload holds.
func TestReloadDoesNotStopUnchangedRules(t *testing.T) {
	c, err := New(testenv.Config(t), Options{Identity: testIdentity})
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t)
	suffix := fmt.Sprintf("%04x", rand.IntN(1<<16))
	steady, added := "steady-"+suffix, "added-"+suffix
	ctx, cancel := context.WithCancel(context.Background())
	// The added rule serves another namespace: its start is all it does here.
	other := testenv.Namespace(t)
	load := func(withAdded bool) *rules.RuleSet {
		t.Helper()
		text := fmt.Sprintf(panicRules, steady, ns)
		if withAdded {
			_, items, _ := strings.Cut(fmt.Sprintf(panicRules, added, other), "rules:\n")
			text += items
		}
		rs, err := rules.Load([]byte(text), rules.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	c.SetRules(ctx, load(false))
	runInBackground(t, c, ctx, cancel)

	widgets := testenv.Dynamic(t).Resource(widgetGVR).Namespace(ns)
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "engine.kubecel.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": ns},
		"spec":     map[string]any{"value": "one"},
	}}
	if _, err := widgets.Create(t.Context(), w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	childIs := func(want string) {
		t.Helper()
		testenv.Eventually(t, 60*time.Second, func() (bool, string) {
			cm, err := testenv.Kube(t).CoreV1().ConfigMaps(ns).Get(t.Context(), "w", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return cm.Data["value"] == want, fmt.Sprintf("child value = %q, want %q", cm.Data["value"], want)
		})
	}
	childIs("one")

	// The reload holds in the middle of starting the added rule.
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	t.Cleanup(letGo) // before the controller stops, also when the test fails
	c.life.beforeStart = func(rule string) {
		if rule == added {
			close(entered)
			<-release
		}
	}
	reloaded := make(chan struct{})
	go func() {
		defer close(reloaded)
		c.SetRules(ctx, load(true))
	}()
	<-entered
	if _, err := widgets.Patch(t.Context(), "w", types.MergePatchType, []byte(`{"spec":{"value":"two"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	childIs("two")
	select {
	case <-reloaded:
		t.Fatal("the reload ended before it was released: the test held nothing")
	default:
	}
	letGo()
	<-reloaded
	if c.view.Load().get(added) == nil {
		t.Errorf("rule %s does not run after the reload", added)
	}
}
