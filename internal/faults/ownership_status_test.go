package faults

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

// twoStatusRules: two rules describe the same widgets, each with its own status field.
const twoStatusRules = rulesHead + `  - name: {{.Rule}}-left
    parent:
      apiVersion: faults.kubecel.dev/v1
      resource: widgets
      namespaces: [{{.NS}}]
    status:
      fields: {left: "${string(parent.spec.value)}"}
  - name: {{.Rule}}-right
    parent:
      apiVersion: faults.kubecel.dev/v1
      resource: widgets
      namespaces: [{{.NS}}]
    status:
      fields: {right: "${string(parent.spec.value * 2)}"}
`

// stillFor is how long a converged parent must go unwritten to count as still.
const stillFor = 5 * time.Second

// TestOwnershipTwoStatusRules: two rules writing the status of the same widget stop
// writing once both have, and keep each other's fields and conditions, each under its
// own condition types; after the first spec and again after an edit.
func TestOwnershipTwoStatusRules(t *testing.T) {
	w := newWorldRules(t, "twostatus", twoStatusRules)
	startLoaded(t, w.Rules)
	w.apply("w", nil, map[string]any{"value": int64(3)})
	w.expectTwoStatuses(t, "w", 3)
	w.setValue("w", 7)
	w.expectTwoStatuses(t, "w", 7)
}

// expectTwoStatuses waits until one rule has described the widget's current spec and
// the widget then stays still, and checks that both rules' fields and conditions are
// there.
func (w *world) expectTwoStatuses(t *testing.T, name string, value int64) {
	t.Helper()
	want := map[string]string{"left": fmt.Sprint(value), "right": fmt.Sprint(2 * value)}
	eventually(t, settle, func() (bool, string) {
		p, err := w.widget(name)
		if err != nil {
			return false, err.Error()
		}
		for field, v := range want {
			if got, _, _ := unstructured.NestedString(p.Object, "status", field); got == v {
				return true, ""
			}
		}
		return false, fmt.Sprintf("widget %s status %v, want %v", name, p.Object["status"], want)
	})
	if err := still(t, w, name); err != nil {
		t.Fatalf("widget %s: the rules overwrite each other's status: %v", name, err)
	}
	p, err := w.widget(name)
	if err != nil {
		t.Fatal(err)
	}
	for field, v := range want {
		if got, _, _ := unstructured.NestedString(p.Object, "status", field); got != v {
			t.Errorf("widget %s status.%s %q, want %q", name, field, got, v)
		}
	}
	for _, rule := range []string{w.Rule + "-left", w.Rule + "-right"} {
		for _, typ := range []string{"Ready", "Synced"} {
			typ = rule + ".kubecel.dev/" + typ
			if gen, ok := conditionGeneration(p, typ); !ok || gen != p.GetGeneration() {
				t.Errorf("widget %s has no condition %s for generation %d; conditions %v", name, typ, p.GetGeneration(), conditionSummary(p))
				continue
			}
			expectCondition(t, p, typ, "True", "", "")
		}
	}
}

// still waits until the widget's resourceVersion stays the same for stillFor, giving up
// after settle. The error then counts kubecel's writes to the widget's status meanwhile
// (from the audit log) and shows the last change.
func still(t testing.TB, w *world, name string) error {
	t.Helper()
	writes := tailAudit(t, func(e controlplane.AuditEvent) bool {
		ref := e.ObjectRef
		return ref.Resource == "widgets" && ref.Namespace == w.NS && ref.Name == name && ref.Subresource == "status"
	})
	var before, last *unstructured.Unstructured
	since := time.Now()
	if ok, _ := within(settle, func() (bool, string) {
		p, err := w.widget(name)
		if err != nil {
			t.Fatal(err)
		}
		if last == nil || p.GetResourceVersion() != last.GetResourceVersion() {
			before, last, since = last, p, time.Now()
		}
		return time.Since(since) >= stillFor, ""
	}); ok {
		return nil
	}
	change := "none seen"
	if before != nil {
		change = cmp.Diff(before.Object["status"], last.Object["status"])
	}
	return fmt.Errorf("kubecel wrote its status %d times in %s and it never stayed the same for %s; the last change (-before +after):\n%s",
		writes.count(t), settle, stillFor, change)
}

// manyRules: a widget would get 10,000 ConfigMaps, more than the default limit of a
// rule's children.
const manyRules = rulesHead + worldParent + `    children:
      - id: config
        forEach: lists.range(10000)
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-${string(each)}"}
    status:
      fields: {name: "${parent.metadata.name}"}
`

// TestOwnershipTooManyChildren: a forEach over more elements than the rule's limit
// creates nothing and says so.
func TestOwnershipTooManyChildren(t *testing.T) {
	w := newWorldRules(t, "toomany", manyRules)
	startLoaded(t, w.Rules)
	w.apply("big", nil, map[string]any{})
	created := func() int {
		cms, err := dyn(t).Resource(configMaps).Namespace(w.NS).List(t.Context(), metav1.ListOptions{LabelSelector: contract.LabelRule + "=" + w.Rule})
		if err != nil {
			t.Fatalf("list configmaps: %v", err)
		}
		return len(cms.Items)
	}
	eventually(t, settle, func() (bool, string) {
		if n := created(); n > 0 {
			t.Fatalf("kubecel created %d of the 10,000 children, want none", n)
		}
		p, err := w.widget("big")
		if err != nil {
			return false, err.Error()
		}
		gen, ok := conditionGeneration(p, contract.ConditionSynced)
		return ok && gen == p.GetGeneration(), fmt.Sprintf("no Synced condition for generation %d: %v", p.GetGeneration(), conditionSummary(p))
	})
	p, err := w.widget("big")
	if err != nil {
		t.Fatal(err)
	}
	if expectCondition(t, p, contract.ConditionSynced, "False", "TooManyChildren", "") {
		if _, _, msg := testenv.Condition(p, contract.ConditionSynced); !strings.Contains(msg, "1000") && !strings.Contains(msg, "1,000") {
			t.Errorf("the TooManyChildren message %q does not name the limit, 1000", msg)
		}
	}
	if n := created(); n > 0 {
		t.Errorf("kubecel created %d of the 10,000 children, want none", n)
	}
}
