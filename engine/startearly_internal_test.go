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

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

// TestFirstStartRunsEarlyRules: a first start of more rules than publishEvery publishes
// them as they start. While the last group's start is held, the rules of the first
// group run (a parent of theirs converges), and the held rule is known to the view
// though it does not run, so that nothing of its is taken for a removed rule's; once
// released, every rule runs.
func TestFirstStartRunsEarlyRules(t *testing.T) {
	t.Cleanup(SetPublishEvery(2))
	c, err := New(testenv.Config(t), Options{Identity: testIdentity})
	if err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprintf("%04x", rand.IntN(1<<16))
	names := []string{"early-a-" + suffix, "early-b-" + suffix, "early-c-" + suffix}
	namespaces := []string{testenv.Namespace(t), testenv.Namespace(t), testenv.Namespace(t)}
	text := fmt.Sprintf(panicRules, names[0], namespaces[0])
	for i := 1; i < len(names); i++ {
		_, items, _ := strings.Cut(fmt.Sprintf(panicRules, names[i], namespaces[i]), "rules:\n")
		text += items
	}
	rs, err := rules.Load([]byte(text), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "engine.kubecel.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": namespaces[0]},
		"spec":     map[string]any{"value": "early"},
	}}
	if _, err := testenv.Dynamic(t).Resource(widgetGVR).Namespace(namespaces[0]).Create(t.Context(), w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	held := names[2]
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	c.life.beforeStart = func(rule string) {
		if rule == held {
			close(entered)
			<-release
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	runInBackground(t, c, ctx, cancel)
	t.Cleanup(letGo) // before the controller stops, also when the test fails
	started := make(chan struct{})
	go func() {
		defer close(started)
		c.SetRules(ctx, rs)
	}()
	<-entered
	testenv.Eventually(t, 60*time.Second, func() (bool, string) {
		cm, err := testenv.Kube(t).CoreV1().ConfigMaps(namespaces[0]).Get(t.Context(), "w", metav1.GetOptions{})
		if err != nil {
			return false, "the child of rule " + names[0] + ": " + err.Error()
		}
		return cm.Data["value"] == "early", fmt.Sprintf("child value %q, want early", cm.Data["value"])
	})
	v := c.view.Load()
	if v.get(names[0]) == nil || v.get(names[1]) == nil {
		t.Errorf("the first group does not run while the last starts: %s %v, %s %v", names[0], v.get(names[0]) != nil, names[1], v.get(names[1]) != nil)
	}
	if v.get(held) != nil || !v.known(held) || v.loaded {
		t.Errorf("while it starts, rule %s: runs %v, known %v; loaded %v (want not running, known, not loaded)", held, v.get(held) != nil, v.known(held), v.loaded)
	}
	select {
	case <-started:
		t.Fatal("the start ended before it was released: the test held nothing")
	default:
	}
	letGo()
	<-started
	v = c.view.Load()
	for _, name := range names {
		if v.get(name) == nil {
			t.Errorf("rule %s does not run after the start", name)
		}
	}
	if !v.loaded || len(v.starting) != 0 {
		t.Errorf("after the start: loaded %v, starting %v", v.loaded, v.starting)
	}
}
