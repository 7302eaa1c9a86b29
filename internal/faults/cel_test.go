package faults

import (
	"fmt"
	"strings"
	"testing"
	"time"

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
