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

	if err := c.finalizers.remove(t.Context(), st, parent("gone", staleUID)); err != nil {
		t.Errorf("parent gone: %v", err)
	}
	if _, err := c.opts.Client.Resource(cmGVR).Namespace(ns).Get(t.Context(), "gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("parent gone: get after the removal = %v, want NotFound", err)
	}

	other, err := c.opts.Client.Resource(cmGVR).Namespace(ns).Create(t.Context(), parent("reused", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.finalizers.remove(t.Context(), st, parent("reused", staleUID)); err != nil {
		t.Errorf("name reused: %v", err)
	}
	after, err := c.opts.Client.Resource(cmGVR).Namespace(ns).Get(t.Context(), "reused", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.GetResourceVersion() != other.GetResourceVersion() {
		t.Errorf("name reused: the other object was written (resourceVersion %s -> %s)", other.GetResourceVersion(), after.GetResourceVersion())
	}
}

// TestMayHoldAFinalizerTheCacheDoesNotShow: a parent the reconciler added the rule's
// finalizer to may hold it, whatever an older copy says, until the reconciler removes it:
// the release of a removed rule finds it even when the cache has not caught up.
func TestMayHoldAFinalizerTheCacheDoesNotShow(t *testing.T) {
	c, ns := newTestReconciler(t)
	st := &watch.Rule{Rule: &rules.Rule{Name: "fin"}, ParentKind: watch.Kind{GVR: cmGVR, Namespaced: true}}
	stale, err := c.opts.Client.Resource(cmGVR).Namespace(ns).Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "p", "namespace": ns},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.MayHold(st, stale) {
		t.Fatal("MayHold before any finalizer was sent = true")
	}
	if _, err := c.finalizers.set(t.Context(), st, stale, true); err != nil {
		t.Fatal(err)
	}
	if !c.MayHold(st, stale) {
		t.Error("MayHold on a copy from before the finalizer was added = false, want true")
	}
	if err := c.ReleaseParent(t.Context(), st, stale); err != nil {
		t.Fatal(err)
	}
	if c.MayHold(st, stale) {
		t.Error("MayHold after the release = true")
	}
	after, err := c.opts.Client.Resource(cmGVR).Namespace(ns).Get(t.Context(), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if Holds(st, after) {
		t.Errorf("finalizers after the release: %v", after.GetFinalizers())
	}
}
