package engine_test

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

const basicRules = widgetRuleHead + `      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata:
            name: ${parent.metadata.name}-config
          data:
            message: ${parent.spec.message}
            size: "${string(parent.spec.size)}"
    status:
      fields:
        message: ${children.config.data.message}
`

func TestCreateUpdateDelete(t *testing.T) {
	f := startController(t, basicRules)
	parent := f.create(widgets, widget(f.ns, "w1", map[string]any{"message": "hello", "size": int64(2)}))

	cm := f.waitFor(configMaps, f.ns, "w1-config", func(o *unstructured.Unstructured) (bool, string) {
		return nestedString(o, "data", "message") == "hello", "data.message not hello"
	})
	labels := cm.GetLabels()
	for k, want := range map[string]string{
		contract.LabelManagedBy: "kubecel", contract.LabelRule: f.rule,
		contract.LabelParentUID: string(parent.GetUID()), contract.LabelChild: "config",
	} {
		if labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, labels[k], want)
		}
	}
	if got, want := cm.GetAnnotations()[contract.AnnotationParent], "engine.kubecel.dev/widgets/"+f.ns+"/w1"; got != want {
		t.Errorf("parent annotation = %q, want %q", got, want)
	}
	refs := cm.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != parent.GetUID() || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("ownerReferences = %+v, want one controller reference to the parent", refs)
	}
	if mf := cm.GetManagedFields(); len(mf) != 1 || mf[0].Manager != contract.FieldManager || mf[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("managedFields = %+v, want one Apply entry by kubecel", mf)
	}

	// Status: fields, observedGeneration and conditions.
	f.waitFor(widgets, f.ns, "w1", func(o *unstructured.Unstructured) (bool, string) {
		msg := nestedString(o, "status", "message")
		gen, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
		ready, _, _ := testenv.Condition(o, contract.ConditionReady)
		synced, _, _ := testenv.Condition(o, contract.ConditionSynced)
		return msg == "hello" && gen == o.GetGeneration() && ready == "True" && synced == "True",
			fmt.Sprintf("status %v", o.Object["status"])
	})

	// Update propagates.
	f.patchSpec(widgets, f.ns, "w1", `{"message":"bye"}`)
	f.waitFor(configMaps, f.ns, "w1-config", func(o *unstructured.Unstructured) (bool, string) {
		return nestedString(o, "data", "message") == "bye", "data.message not bye yet"
	})
	f.waitFor(widgets, f.ns, "w1", func(o *unstructured.Unstructured) (bool, string) {
		gen, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
		return nestedString(o, "status", "message") == "bye" && gen == o.GetGeneration(), fmt.Sprintf("status %v", o.Object["status"])
	})

	// Delete: garbage collection follows the owner reference.
	if err := testenv.Dynamic(t).Resource(widgets).Namespace(f.ns).Delete(t.Context(), "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitGone(configMaps, f.ns, "w1-config")
}
