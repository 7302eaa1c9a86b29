package engine_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

const clusterParentRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: {{.Rule}}
    parent:
      apiVersion: engine.kubecel.dev/v1
      resource: clusterwidgets
      selector: {matchLabels: {test-rule: "{{.Rule}}"}}
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata:
            name: ${parent.metadata.name}
            namespace: ${parent.spec.namespace}
          data: {owner: "${parent.metadata.name}"}
`

func TestClusterScopedParentWithNamespacedChild(t *testing.T) {
	f := startController(t, clusterParentRules)
	name := f.rule + "-cw"
	parent := f.create(clusterWidgets, map[string]any{
		"apiVersion": "engine.kubecel.dev/v1", "kind": "ClusterWidget",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"test-rule": f.rule}},
		"spec":     map[string]any{"namespace": f.ns},
	})
	cm := f.waitFor(configMaps, f.ns, name, nil)
	if refs := cm.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != parent.GetUID() {
		t.Errorf("ownerReferences = %+v, want the cluster-scoped parent", refs)
	}
	got, _ := f.get(clusterWidgets, "", name)
	if slices.Contains(got.GetFinalizers(), contract.FinalizerFor(f.rule)) {
		t.Error("finalizer added although garbage collection can follow the owner reference")
	}
	if err := testenv.Dynamic(t).Resource(clusterWidgets).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitGone(configMaps, f.ns, name)
}

const crossNamespaceRules = widgetRuleHead + `      - id: shared
        crossNamespace: {{.Cross}}
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata:
            name: ${parent.metadata.namespace + "-" + parent.metadata.name}
            namespace: ${parent.spec.target}
          data: {from: "${parent.metadata.namespace}"}
    status:
      fields: {target: "${parent.spec.target}"}
`

func TestChildInAnotherNamespace(t *testing.T) {
	target := testenv.Namespace(t)
	t.Run("allowed with crossNamespace", func(t *testing.T) {
		f := startController(t, strings.ReplaceAll(crossNamespaceRules, "{{.Cross}}", "true"))
		f.create(widgets, widget(f.ns, "x", map[string]any{"target": target}))
		childName := f.ns + "-x"
		cm := f.waitFor(configMaps, target, childName, nil)
		if len(cm.GetOwnerReferences()) != 0 {
			t.Errorf("cross-namespace child has owner references %+v; GC cannot follow them", cm.GetOwnerReferences())
		}
		parent := f.waitFor(widgets, f.ns, "x", func(o *unstructured.Unstructured) (bool, string) {
			return slices.Contains(o.GetFinalizers(), contract.FinalizerFor(f.rule)), fmt.Sprintf("finalizers %v", o.GetFinalizers())
		})
		if err := testenv.Dynamic(t).Resource(widgets).Namespace(f.ns).Delete(t.Context(), parent.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		f.waitGone(configMaps, target, childName)
		f.waitGone(widgets, f.ns, "x") // the finalizer was removed after the cleanup
	})
	t.Run("refused without crossNamespace", func(t *testing.T) {
		f := startController(t, strings.ReplaceAll(crossNamespaceRules, "{{.Cross}}", "false"))
		f.create(widgets, widget(f.ns, "x", map[string]any{"target": target}))
		f.waitFor(widgets, f.ns, "x", func(o *unstructured.Unstructured) (bool, string) {
			status, reason, msg := testenv.Condition(o, contract.ConditionSynced)
			return status == "False" && reason == contract.ReasonApplyFailed && strings.Contains(msg, "crossNamespace: true"),
				fmt.Sprintf("Synced=%s %s %q", status, reason, msg)
		})
		if _, err := f.get(configMaps, target, f.ns+"-x"); err == nil {
			t.Error("child created in another namespace without crossNamespace")
		}
	})
}

const statefulSetRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: {{.Rule}}
    parent:
      apiVersion: apps/v1
      resource: statefulsets
      namespaces: [{{.NS}}]
    children:
      - id: podService
        forEach: lists.range(50).filter(i, i < parent.spec.replicas)
        template:
          apiVersion: v1
          kind: Service
          metadata:
            name: ${parent.metadata.name + "-" + string(each)}
          spec:
            selector:
              statefulset.kubernetes.io/pod-name: ${parent.metadata.name + "-" + string(each)}
            ports: [{port: 80}]
`

func TestBuiltInParentIsDecoratedNotWritten(t *testing.T) {
	f := startController(t, statefulSetRules)
	sts := f.create(statefulSets, map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": "db", "namespace": f.ns},
		"spec": map[string]any{
			"replicas": int64(2), "serviceName": "db",
			"selector": map[string]any{"matchLabels": map[string]any{"app": "db"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "db"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "db", "image": "postgres"}}},
			},
		},
	})
	f.waitChildren("services", "podService", "db-0", "db-1")
	f.patchSpec(statefulSets, f.ns, "db", `{"replicas":1}`)
	f.waitChildren("services", "podService", "db-0")
	f.waitIdle()
	got, err := f.get(statefulSets, f.ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range got.GetManagedFields() {
		if strings.HasPrefix(mf.Manager, contract.FieldManager) {
			t.Errorf("kubecel wrote to the StatefulSet it does not own: %+v", mf)
		}
	}
	if got.GetGeneration() != sts.GetGeneration()+1 {
		t.Errorf("generation %d, want %d (only our scale patch)", got.GetGeneration(), sts.GetGeneration()+1)
	}
}
