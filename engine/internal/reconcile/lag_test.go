package reconcile

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubecel/kubecel/rules/contract"
)

// farChild is a ConfigMap in another namespace: garbage collection cannot follow it, so
// the rule's finalizer holds the parent until kubecel has deleted it.
const farChild = `      - id: far
        crossNamespace: true
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata:
            name: ${parent.metadata.name}-far
            namespace: other
          data:
            message: ${parent.spec.message}
`

// TestDeletedParentWaitsForItsUnseenChild: the caches lag behind our writes. A parent
// deleted right after its cross-namespace child was created, before the child's watch
// event, is not let go of: its finalizer stays until the caches show the child, which
// is then deleted. (Before, the finalizer went at once and the child stayed behind:
// TestForgedChildBlocksNoDeletion and TestChildInAnotherNamespace failed under load.)
// Here the ConfigMaps' watch never reports, so the caches never catch up.
func TestDeletedParentWaitsForItsUnseenChild(t *testing.T) {
	api := newFakeAPI(t, fakeWidget(map[string]any{"message": "hi"}))
	api.PrependWatchReactor("configmaps", func(clienttesting.Action) (bool, watch.Interface, error) {
		return true, watch.NewFake(), nil
	})
	r := newFakeRigOn(t, api, farChild, false)
	if _, err := r.reconcile(t, "ns", "w"); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Tracker().Get(cmGVR, "other", "w-far"); err != nil {
		t.Fatalf("the child was not created: %v", err)
	}
	finalizer := contract.FinalizerFor("fake")
	stored, err := api.Tracker().Get(widgetGVR, "ns", "w")
	if err != nil {
		t.Fatal(err)
	}
	w := stored.(*unstructured.Unstructured).DeepCopy()
	if !slices.Contains(w.GetFinalizers(), finalizer) {
		t.Fatalf("finalizers %v, want the rule's", w.GetFinalizers())
	}
	now := metav1.NewTime(time.Now())
	w.SetDeletionTimestamp(&now)
	if err := api.Tracker().Update(widgetGVR, api.stamp(w), "ns"); err != nil {
		t.Fatal(err)
	}
	r.waitCached(t, widgetGVR, "ns", "w")
	api.writes()

	res, err := r.reconcile(t, "ns", "w")
	if err != nil {
		t.Fatal(err)
	}
	// The finalizer is removed by an apply of the parent's metadata without it (the
	// fake does not model what an apply removes: the request is what tells).
	if writes := describe(api.writes()); slices.Contains(writes, "patch widgets w") {
		t.Errorf("the finalizer was removed (writes %v) while the child the caches do not show yet stays", writes)
	}
	if res.RequeueAfter <= 0 {
		t.Errorf("result %+v, want a look again after a delay", res)
	}
}
