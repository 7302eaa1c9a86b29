package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

// bigStatusRules copies the parent's spec.text into its status, and makes one child.
const bigStatusRules = widgetRuleHead + `      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-config"}
          data: {size: "${string(size(parent.spec.text))}"}
    status:
      fields:
        copy: ${parent.spec.text}
        length: ${size(parent.spec.text)}
`

// TestStatusTooLarge: a status that the API server refuses for its size (here a 1 MB
// value copied from the spec: with the spec, the object is over etcd's limit) is
// reported on the parent, in a Synced condition that says so and names the largest
// fields, written without those fields; a parent of the same rule with a small value
// converges as usual. (Before the fix the parent showed no condition at all, and the
// write was retried in the log only.)
func TestStatusTooLarge(t *testing.T) {
	f := startController(t, bigStatusRules)
	f.create(widgets, widget(f.ns, "small", map[string]any{"text": "hello"}))
	f.create(widgets, widget(f.ns, "big", map[string]any{"text": strings.Repeat("x", 1<<20)}))
	f.waitFor(widgets, f.ns, "small", func(o *unstructured.Unstructured) (bool, string) {
		status, reason, _ := testenv.Condition(o, contract.ConditionSynced)
		copied := nestedString(o, "status", "copy")
		return status == "True" && copied == "hello", fmt.Sprintf("Synced=%s %s, status.copy %q", status, reason, copied)
	})
	f.waitFor(configMaps, f.ns, "big-config", nil)
	big := f.waitFor(widgets, f.ns, "big", func(o *unstructured.Unstructured) (bool, string) {
		status, reason, msg := testenv.Condition(o, contract.ConditionSynced)
		return status == "False" && reason == contract.ReasonStatusTooLarge, fmt.Sprintf("Synced=%s %s %q", status, reason, msg)
	})
	_, _, msg := testenv.Condition(big, contract.ConditionSynced)
	for _, want := range []string{"status.copy", "left out"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Synced message %q does not say %q", msg, want)
		}
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(big.Object, "status", "copy"); found {
		t.Error("status.copy was written after all")
	}
	if n, _, _ := unstructured.NestedInt64(big.Object, "status", "length"); n != 1<<20 {
		t.Errorf("status.length = %d, want the small field written (%d)", n, 1<<20)
	}
}
