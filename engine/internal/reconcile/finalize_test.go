package reconcile

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/rules"
)

// TestRemoveFinalizerOfGoneParent: removing the finalizer of a parent that is gone, or
// whose name another object took, is done: no error, nothing created or changed.
func TestRemoveFinalizerOfGoneParent(t *testing.T) {
	c, ns := newTestReconciler(t)
	st := &watch.Rule{Rule: &rules.Rule{Name: "fin"}, ParentKind: watch.Kind{GVR: cmGVR, Namespaced: true}}
	parent := func(name string, uid types.UID) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
		u.SetName(name)
		u.SetNamespace(ns)
		u.SetUID(uid)
		return u
	}
	const staleUID = types.UID("11111111-2222-3333-4444-555555555555")

	if err := c.applyFinalizer(t.Context(), st, parent("gone", staleUID), false); err != nil {
		t.Errorf("parent gone: %v", err)
	}
	if _, err := c.send.client.Resource(cmGVR).Namespace(ns).Get(t.Context(), "gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("parent gone: get after the removal = %v, want NotFound", err)
	}

	other, err := c.send.client.Resource(cmGVR).Namespace(ns).Create(t.Context(), parent("reused", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.applyFinalizer(t.Context(), st, parent("reused", staleUID), false); err != nil {
		t.Errorf("name reused: %v", err)
	}
	after, err := c.send.client.Resource(cmGVR).Namespace(ns).Get(t.Context(), "reused", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.GetResourceVersion() != other.GetResourceVersion() {
		t.Errorf("name reused: the other object was written (resourceVersion %s -> %s)", other.GetResourceVersion(), after.GetResourceVersion())
	}
}
