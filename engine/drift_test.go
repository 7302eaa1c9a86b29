package engine_test

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/internal/testenv"
)

func TestDriftIsRepaired(t *testing.T) {
	f := startController(t, basicRules)
	f.create(widgets, widget(f.ns, "d", map[string]any{"message": "keep", "size": int64(1)}))
	cm := f.waitFor(configMaps, f.ns, "d-config", nil)
	cms := testenv.Dynamic(t).Resource(configMaps).Namespace(f.ns)

	t.Run("deleted child comes back", func(t *testing.T) {
		if err := cms.Delete(t.Context(), "d-config", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		f.waitFor(configMaps, f.ns, "d-config", func(o *unstructured.Unstructured) (bool, string) {
			return o.GetUID() != cm.GetUID(), "still the old object"
		})
	})

	t.Run("managed field edited by someone else is restored, their label survives", func(t *testing.T) {
		patch := `{"metadata":{"labels":{"team":"blue"}},"data":{"message":"tampered","extra":"theirs"}}`
		if _, err := cms.Patch(t.Context(), "d-config", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "someone"}); err != nil {
			t.Fatal(err)
		}
		got := f.waitFor(configMaps, f.ns, "d-config", func(o *unstructured.Unstructured) (bool, string) {
			return nestedString(o, "data", "message") == "keep", fmt.Sprintf("data.message = %q", nestedString(o, "data", "message"))
		})
		if got.GetLabels()["team"] != "blue" {
			t.Errorf("label team = %q, want the other manager's label kept", got.GetLabels()["team"])
		}
		if nestedString(got, "data", "extra") != "theirs" {
			t.Errorf("data.extra = %q, want the other manager's field kept", nestedString(got, "data", "extra"))
		}
	})
}

func TestPruneLeavesForeignObjectsAlone(t *testing.T) {
	f := startController(t, forEachRules)
	f.create(widgets, widget(f.ns, "p", map[string]any{"envs": []any{"a", "b"}}))
	f.waitChildren("configmaps", "env", "p-a", "p-b")

	// An object without our labels, named like a child we are about to stop producing,
	// is not ours. So is one that carries a label of ours but not the parent's UID.
	cms := testenv.Dynamic(t).Resource(configMaps).Namespace(f.ns)
	foreign := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "p-c", "namespace": f.ns},
	}}
	if _, err := cms.Create(t.Context(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "p-other", "namespace": f.ns, "labels": map[string]any{
			"app.kubernetes.io/managed-by": "kubecel", "kubecel.dev/rule": f.rule, "kubecel.dev/child": "env",
			"kubecel.dev/parent-uid": "00000000-0000-0000-0000-000000000000"}},
	}}
	if _, err := cms.Create(t.Context(), other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.patchSpec(widgets, f.ns, "p", `{"envs":["b"]}`)
	f.waitChildren("configmaps", "env", "p-b", "p-other")
	f.waitIdle()
	for _, name := range []string{"p-c", "p-other"} {
		if _, err := f.get(configMaps, f.ns, name); err != nil {
			t.Errorf("%s: %v (an object that is not this parent's child must never be pruned)", name, err)
		}
	}
}
