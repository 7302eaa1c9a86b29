package reconcile

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/engine/internal/metrics"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/prometheus/client_golang/prometheus"
)

// TestDeleteChildChecksUID: a stale cached child whose name now belongs to another
// object (deleted and recreated) must not be deleted.
func TestDeleteChildChecksUID(t *testing.T) {
	c, ns := newTestReconciler(t)
	st := &watch.Rule{Rule: &rules.Rule{Name: "uid"}, Children: map[schema.GroupKind]*watch.ChildKind{
		{Kind: "ConfigMap"}: {Kind: watch.Kind{GVR: cmGVR, Namespaced: true}},
	}}
	live := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "same-name", "namespace": ns},
	}}
	created, err := c.opts.Client.Resource(cmGVR).Namespace(ns).Create(t.Context(), live, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := created.DeepCopy()
	stale.SetUID(types.UID("11111111-2222-3333-4444-555555555555"))
	if err := c.deletion.deleteChild(t.Context(), st, mustCache(t, stale), false); err != nil {
		t.Fatalf("deleteChild: %v", err)
	}
	if _, err := c.opts.Client.Resource(cmGVR).Namespace(ns).Get(t.Context(), "same-name", metav1.GetOptions{}); err != nil {
		t.Fatalf("object with another UID was deleted: %v", err)
	}
	if err := c.deletion.deleteChild(t.Context(), st, mustCache(t, created), false); err != nil {
		t.Fatalf("deleteChild: %v", err)
	}
	if _, err := c.opts.Client.Resource(cmGVR).Namespace(ns).Get(t.Context(), "same-name", metav1.GetOptions{}); err == nil {
		t.Fatal("object with the matching UID was not deleted")
	}
}

func mustCache(t *testing.T, u *unstructured.Unstructured) *informers.Object {
	t.Helper()
	c, err := informers.NewObject(u, trustLabels)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var cmGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// newTestReconciler is a reconciler on the package's control plane, for tests that call
// its steps directly, and a namespace of the test's own.
func newTestReconciler(t *testing.T) (*Reconciler, string) {
	t.Helper()
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	c := New(Options{Client: testenv.Dynamic(t), Identity: testIdentity, Metrics: m,
		Written: informers.NewWritten(func(u *unstructured.Unstructured) bool { return testIdentity.ProvesObject(u) }), Known: func(string) bool { return false }})
	return c, testenv.Namespace(t)
}
