package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

// runawayRules: rule "<Rule>-runaway" nests three comprehensions over a list the parent
// chooses (a billion steps for 1,000 items); rule "<Rule>" is worldRules for the other
// widgets.
const runawayRules = rulesHead + `  - name: {{.Rule}}-runaway
    parent:
      apiVersion: faults.kubecel.dev/v1
      resource: widgets
      namespaces: [{{.NS}}]
      selector: {matchLabels: {kind: runaway}}
    children:
      - id: count
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
          data:
            count: ${string(parent.spec.items.map(a, parent.spec.items.map(b, parent.spec.items.map(c, a + b + c))).size())}
    status:
      fields: {items: "${string(size(parent.spec.items))}"}
` + worldParent + `      selector: {matchLabels: {kind: plain}}
` + worldChildren

// TestCELRunaway: a widget makes its rule's expression explode. That widget gets
// Synced=False naming the expression; the process stays healthy and the other rule's
// widgets, old and new, converge.
func TestCELRunaway(t *testing.T) {
	w := newWorldRules(t, "runaway", runawayRules)
	ctrl := startKubecel(t, w.Rules, cp.Kubeconfig)
	items := make([]any, 1000)
	for i := range items {
		items[i] = int64(i)
	}
	plain := map[string]string{"kind": "plain"}
	w.apply("before", plain, map[string]any{"value": int64(1)})
	start := time.Now()
	w.apply("bomb", map[string]string{"kind": "runaway"}, map[string]any{"items": items})
	var message string
	eventually(t, settle, func() (bool, string) {
		p, err := w.widget("bomb")
		if err != nil {
			return false, err.Error()
		}
		status, reason, msg := testenv.Condition(p, contract.ConditionSynced)
		message = msg
		return status == "False" && strings.Contains(msg, "parent.spec.items.map(a, parent.spec.items.map(b"),
			fmt.Sprintf("Synced=%q %s %q", status, reason, msg)
	})
	t.Logf("Synced=False %s after the widget was created: %s", time.Since(start).Round(time.Millisecond), message)

	w.apply("after", plain, map[string]any{"value": int64(2)})
	took := eventually(t, settle, func() (bool, string) {
		for _, name := range []string{"before", "after"} {
			p, err := w.widget(name)
			if err != nil {
				return false, err.Error()
			}
			if msg := statusCurrent(p); msg != "" {
				return false, msg
			}
		}
		return true, ""
	})
	t.Logf("the other rule's widgets converged %s after the runaway was reported", took.Round(time.Millisecond))
	code, body, err := ctrl.get("/healthz")
	if err != nil || code != 200 {
		t.Errorf("/healthz = %d %q, %v; want 200", code, body, err)
	}
	if !ctrl.running() {
		t.Error("kubecel exited")
	}
}

// growthRules: rule "<Rule>" gives each widget worldRules' children and status, and a
// page filled from the template its spec holds, with its name: a rule `check` finds
// nothing wrong with, which lets whoever writes a widget ask for a string of
// size(template)/6 x size(name) bytes.
const growthRules = rulesHead + worldParent + `    children:
      - id: local
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
          data: {value: "${string(parent.spec.value)}"}
      - id: page
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-page"}
          data:
            html: '${parent.spec.template.replace("[name]", parent.spec.name)}'
    status:
      fields: {value: "${string(parent.spec.value)}"}
`

// TestCELGrowthBomb: a widget of 40 KB asks its rule's replace for a 64 MB string (a
// larger one, 1.28 GB from 208 KB, OOM-killed the shipped controller, which then
// reconciled it again at start). That widget alone fails, with Synced=False naming the
// rule, child, field and expression and the memory limit; its other child is applied;
// a neighbour of the same rule, and a widget created after, converge; the process keeps
// serving.
func TestCELGrowthBomb(t *testing.T) {
	w := newWorldRules(t, "growth", growthRules)
	ctrl := startKubecel(t, w.Rules, cp.Kubeconfig)
	w.apply("neighbour", nil, map[string]any{"value": int64(1), "template": "<h1>[name]</h1>", "name": "neighbour"})
	start := time.Now()
	w.apply("bomb", nil, map[string]any{"value": int64(2), "template": strings.Repeat("[name]", 4000), "name": strings.Repeat("n", 16<<10)})
	want := fmt.Sprintf(`rule %q child "page": template.data.html: ${parent.spec.template.replace("[name]", parent.spec.name)}: memory limit exceeded: replace() would take`, w.Rule)
	eventually(t, settle, func() (bool, string) {
		p, err := w.widget("bomb")
		if err != nil {
			return false, err.Error()
		}
		status, reason, msg := testenv.Condition(p, contract.ConditionSynced)
		return status == "False" && strings.Contains(msg, want), fmt.Sprintf("Synced=%q %s %.300q", status, reason, msg)
	})
	t.Logf("Synced=False %s after the widget was created", time.Since(start).Round(time.Millisecond))

	w.apply("after", nil, map[string]any{"value": int64(3), "template": "[name]!", "name": "after"})
	took := eventually(t, settle, func() (bool, string) {
		for name, html := range map[string]string{"neighbour": "<h1>neighbour</h1>", "after": "after!"} {
			p, err := w.widget(name)
			if err != nil {
				return false, err.Error()
			}
			if msg := statusCurrent(p); msg != "" {
				return false, msg
			}
			if got, err := w.configMapData(name+"-page", "html"); got != html {
				return false, fmt.Sprintf("page of %s: %q, %v; want %q", name, got, err, html)
			}
		}
		// The bomb's other child is applied.
		if got, err := w.configMapData("bomb", "value"); got != "2" {
			return false, fmt.Sprintf("child local of bomb: value %q, %v", got, err)
		}
		return true, ""
	})
	t.Logf("the neighbours converged %s after the bomb was reported", took.Round(time.Millisecond))
	if code, body, err := ctrl.get("/healthz"); err != nil || code != 200 {
		t.Errorf("/healthz = %d %q, %v; want 200", code, body, err)
	}
	if !ctrl.running() {
		t.Error("kubecel exited")
	}
	// Memory is measured, not asserted (that is for benchmarks); with -race, the
	// resident size includes the race detector's.
	t.Logf("resident size after the bomb: %.0f MB", scrape(t, ctrl).rss/1e6)
}

// configMapData reads one key of a ConfigMap of the world's namespace.
func (w *world) configMapData(name, key string) (string, error) {
	cm, err := dyn(w.t).Resource(configMaps).Namespace(w.NS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	v, _, err := unstructured.NestedString(cm.Object, "data", key)
	return v, err
}
