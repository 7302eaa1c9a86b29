package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

// A heavy tenant that spreads its work (issue 44): its parents in many namespaces, or
// many cluster-scoped parents. Each heavy parent's children are fewer than a batch, so
// that each takes one turn: a queue that gave every namespace, or every cluster-scoped
// parent, a flow of its own served the light parent, which came after them, only once
// each of them had had its turn, that is after the heavy work was done. One worker
// makes the order exact; nothing here is timed.

// spreadChildren is each heavy parent's number of ConfigMaps, under a batch.
const spreadChildren = 40

// spreadRules serve Widgets labelled for the test in every namespace: one with spec.n
// gets that many ConfigMaps, one without gets one.
const spreadRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: {{.Rule}}
    parent:
      apiVersion: engine.kubecel.dev/v1
      resource: widgets
      selector: {matchLabels: {test-rule: "{{.Rule}}"}}
    children:
      - id: many
        when: has(parent.spec.n)
        forEach: lists.range(100).filter(i, i < int(parent.spec.n))
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-${string(each)}"}
          data: {index: "${string(each)}"}
      - id: one
        when: "!has(parent.spec.n)"
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
          data: {value: "${parent.spec.value}"}
    status:
      fields:
        tenant: "${has(parent.spec.n) ? 'heavy' : 'light'}"
`

// tenantLabel is the fairness key of the tests that set one.
const tenantLabel = "engine.kubecel.dev/tenant"

// TestFairSpreadOverNamespaces: a tenant with one heavy parent in each of 50 namespaces,
// which a namespace label names as one tenant (engine.Options.FairnessKey), and a light
// tenant's parent created once the heavy work started: the light parent is served before
// the heavy work is done.
func TestFairSpreadOverNamespaces(t *testing.T) {
	f := startControllerWith(t, spreadRules, rules.Options{}, engine.Options{Workers: 1, FairnessKey: tenantLabel})
	const spread = 50
	heavy := make([]string, spread)
	for i := range heavy {
		heavy[i] = fmt.Sprintf("%s-h%02d", f.ns, i)
		labelledNamespace(t, heavy[i], map[string]string{tenantLabel: "heavy-" + f.rule})
	}
	for _, ns := range heavy {
		f.create(widgets, labelled(widget(ns, "big", map[string]any{"n": spreadChildren}), f.rule))
	}
	isHeavy := func(e controlplane.AuditEvent) bool { return strings.HasPrefix(e.ObjectRef.Namespace, f.ns+"-h") }
	lightServedBeforeHeavyDone(t, f, isHeavy, spread*spreadChildren)
}

// TestFairSpreadOverClusterScopedParents: a heavy rule's 200 cluster-scoped parents, and
// a light tenant's parent of another rule created once the heavy work started: the light
// parent is served before the heavy work is done.
func TestFairSpreadOverClusterScopedParents(t *testing.T) {
	const many = 200
	f := startControllerWith(t, spreadRules+`  - name: {{.Rule}}c
    parent:
      apiVersion: engine.kubecel.dev/v1
      resource: clusterwidgets
      selector: {matchLabels: {test-rule: "{{.Rule}}"}}
    children:
      - id: part
        forEach: lists.range(5)
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata:
            name: "${parent.metadata.name}-${string(each)}"
            namespace: ${parent.spec.namespace}
          data: {index: "${string(each)}"}
`, rules.Options{}, engine.Options{Workers: 1})
	t.Cleanup(func() {
		_ = testenv.Dynamic(t).Resource(clusterWidgets).DeleteCollection(context.Background(), metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: "test-rule=" + f.rule})
	})
	for i := range many {
		f.create(clusterWidgets, map[string]any{
			"apiVersion": "engine.kubecel.dev/v1", "kind": "ClusterWidget",
			"metadata": map[string]any{"name": fmt.Sprintf("%s-c%03d", f.rule, i), "labels": map[string]any{"test-rule": f.rule}},
			"spec":     map[string]any{"namespace": f.ns},
		})
	}
	isHeavy := func(e controlplane.AuditEvent) bool {
		return e.ObjectRef.Namespace == f.ns && strings.HasPrefix(e.ObjectRef.Name, f.rule+"-c")
	}
	lightServedBeforeHeavyDone(t, f, isHeavy, many*5)
}

// lightServedBeforeHeavyDone waits until the heavy tenant's work started, creates the
// light tenant's parent in the fixture's namespace, waits until it is Ready and then
// until the heavy tenant's total children exist, and checks in the audit log that the
// controller wrote the light parent's status before it created the last heavy child
// (isHeavy tells the heavy children's writes).
func lightServedBeforeHeavyDone(t *testing.T, f *fixture, isHeavy func(controlplane.AuditEvent) bool, total int) {
	t.Helper()
	writes := func() []controlplane.AuditEvent {
		events, err := testenv.ControlPlane(t).AuditEvents()
		if err != nil {
			t.Fatal(err)
		}
		var out []controlplane.AuditEvent
		for _, e := range events {
			if e.UserAgent == f.userAgent() && e.ObjectRef.Resource == "configmaps" && isHeavy(e) {
				out = append(out, e)
			}
		}
		return out
	}
	f.eventually(func() (bool, string) {
		n := len(writes())
		return n >= spreadChildren, fmt.Sprintf("%d heavy children written: the heavy work has not started", n)
	})
	f.create(widgets, labelled(widget(f.ns, "light", map[string]any{"value": "1"}), f.rule))
	f.waitFor(widgets, f.ns, "light", func(o *unstructured.Unstructured) (bool, string) {
		st, _, msg := testenv.Condition(o, "Ready")
		return st == "True", "Ready " + st + ": " + msg
	})
	f.eventually(func() (bool, string) {
		n := len(writes())
		return n >= total, fmt.Sprintf("%d of %d heavy children written", n, total)
	})
	events, err := testenv.ControlPlane(t).AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	heavyBefore, served := 0, false
	for _, e := range events {
		if e.UserAgent != f.userAgent() {
			continue
		}
		if e.ObjectRef.Resource == "widgets" && e.ObjectRef.Namespace == f.ns && e.ObjectRef.Name == "light" && e.ObjectRef.Subresource == "status" {
			served = true
			break
		}
		if e.ObjectRef.Resource == "configmaps" && isHeavy(e) {
			heavyBefore++
		}
	}
	t.Logf("heavy children written before the light parent's status: %d of %d", heavyBefore, total)
	if !served || heavyBefore >= total {
		t.Errorf("the light parent's status was written after the heavy tenant's last child (%d of %d before it): it waited for the heavy work to finish", heavyBefore, total)
	}
}

// labelled adds the test-rule label the spread rules select by.
func labelled(obj map[string]any, rule string) map[string]any {
	obj["metadata"].(map[string]any)["labels"] = map[string]any{"test-rule": rule}
	return obj
}

// labelledNamespace creates a namespace with labels, deleted when the test ends.
func labelledNamespace(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	kube := testenv.Kube(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}
