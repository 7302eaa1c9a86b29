package reconcile

import (
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// TestSendDeleteExact: kubecel deletes a child of a deleted parent only as its cache shows
// it. A child that someone deleted and created again under the same name, or that changed
// since (as when the garbage collector orphans it), is left alone:
// the delete is a conflict. Each case starts from a cached copy that is behind the
// server, which is what the preconditions guard against.
func TestSendDeleteExact(t *testing.T) {
	c, ns := newTestReconciler(t)
	st := &watch.Rule{
		Rule: &rules.Rule{Name: "own"},
		Children: map[schema.GroupKind]*watch.ChildKind{
			{Kind: "ConfigMap"}: {Kind: watch.Kind{GVR: cmGVR, Namespaced: true}},
		},
	}
	tests := []struct {
		name string
		// change is done on the server after the cache copied the object.
		change       func(t *testing.T, obj *unstructured.Unstructured)
		wantConflict bool
		wantGone     bool
	}{
		{name: "unchanged", wantGone: true},
		{name: "already-gone", change: func(t *testing.T, obj *unstructured.Unstructured) {
			if err := c.opts.Client.Resource(cmGVR).Namespace(ns).Delete(t.Context(), obj.GetName(), metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}, wantGone: true},
		{name: "created-again", change: func(t *testing.T, obj *unstructured.Unstructured) {
			if err := c.opts.Client.Resource(cmGVR).Namespace(ns).Delete(t.Context(), obj.GetName(), metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			again := obj.DeepCopy()
			again.SetUID("")
			again.SetResourceVersion("")
			if _, err := c.opts.Client.Resource(cmGVR).Namespace(ns).Create(t.Context(), again, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, wantConflict: true},
		{name: "changed", change: func(t *testing.T, obj *unstructured.Unstructured) {
			patch := []byte(`{"metadata":{"labels":{"team":"x"}}}`)
			if _, err := c.opts.Client.Resource(cmGVR).Namespace(ns).Patch(t.Context(), obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}, wantConflict: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "child-" + tt.name, "namespace": ns, "labels": map[string]any{
					contract.LabelManagedBy: contract.ManagedByValue, contract.LabelRule: "own", contract.LabelParentUID: "dddddddd-0000-0000-0000-000000000004", contract.LabelChild: "cm",
				}},
			}}
			created, err := c.opts.Client.Resource(cmGVR).Namespace(ns).Create(t.Context(), obj, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cached, err := informers.NewObject(created, trustLabels)
			if err != nil {
				t.Fatal(err)
			}
			if tt.change != nil {
				tt.change(t, created)
			}
			err = c.deletion.sendDelete(t.Context(), st, cached, true)
			if got := apierrors.IsConflict(err); got != tt.wantConflict || (!tt.wantConflict && err != nil) {
				t.Fatalf("sendDelete: %v; want conflict %v", err, tt.wantConflict)
			}
			_, err = c.opts.Client.Resource(cmGVR).Namespace(ns).Get(t.Context(), created.GetName(), metav1.GetOptions{})
			if gone := apierrors.IsNotFound(err); gone != tt.wantGone {
				t.Errorf("after sendDelete: get error %v; want gone %v", err, tt.wantGone)
			}
		})
	}
}

// TestStillChildOf: a child of a deleted parent is deleted only while it still points at
// that parent: an owner reference to its UID, or, for a child garbage collection cannot
// follow (another namespace), the UID label alone.
func TestStillChildOf(t *testing.T) {
	const uid = types.UID("eeeeeeee-0000-0000-0000-000000000005")
	st := &watch.Rule{
		Rule:       &rules.Rule{Name: "own"},
		ParentKind: watch.Kind{Namespaced: true},
		Children: map[schema.GroupKind]*watch.ChildKind{
			{Kind: "ConfigMap"}: {Kind: watch.Kind{GVR: cmGVR, Namespaced: true}},
		},
	}
	key := watch.Key{Rule: "own", Namespace: "team-a", Name: "p"}
	owner := []any{map[string]any{"apiVersion": "v1", "kind": "Widget", "name": "p", "uid": string(uid), "controller": true}}
	other := []any{map[string]any{"apiVersion": "v1", "kind": "Widget", "name": "q", "uid": "ffffffff-0000-0000-0000-000000000006"}}
	tests := []struct {
		name      string
		namespace string
		owners    []any
		want      bool
	}{
		{name: "owner reference", namespace: "team-a", owners: owner, want: true},
		{name: "owner reference removed", namespace: "team-a", want: false},
		{name: "another owner", namespace: "team-a", owners: other, want: false},
		{name: "other namespace", namespace: "team-b", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md := map[string]any{"name": "c", "namespace": tt.namespace, "uid": "c1", "resourceVersion": "7"}
			if tt.owners != nil {
				md["ownerReferences"] = tt.owners
			}
			cached, err := informers.NewObject(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}}, trustLabels)
			if err != nil {
				t.Fatal(err)
			}
			got, err := stillChildOf(st, key, uid, cached)
			if err != nil || got != tt.want {
				t.Errorf("stillChildOf = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestGoneParents: the memory of deleted parents keeps the orphan mark of a parent that
// was seen terminating with the orphan policy, forgets a parent that was not deleted
// after all, and forgets done parents once goneTTL has passed.
func TestGoneParents(t *testing.T) {
	g := newMemory()
	a := watch.Key{Rule: "r", Namespace: "ns", Name: "a"}
	b := watch.Key{Rule: "r", Namespace: "ns", Name: "b"}

	g.update(a, func(p *parentMemo) { p.gone = &goneParent{uid: "uid-a", orphan: true} })
	g.addGone(a, &goneParent{uid: "uid-a", sure: true})
	if p, ok := g.gone(a); !ok || !p.orphan || !p.sure {
		t.Errorf("after the orphan mark and add: %+v, %v; want sure and orphan", p, ok)
	}
	g.addGone(a, &goneParent{uid: "uid-a2"}) // a new parent of the same name went too
	if p, _ := g.gone(a); p.orphan {
		t.Errorf("a new parent of the same name inherited the orphan mark: %+v", p)
	}
	g.finishGone(a, "uid-other")
	if p, _ := g.gone(a); !p.done.IsZero() {
		t.Error("finishing another UID marked the parent done")
	}
	g.finishGone(a, "uid-a2")
	if p, _ := g.gone(a); p.done.IsZero() {
		t.Error("finishGone did not mark the parent done")
	}

	g.addGone(b, &goneParent{uid: "uid-b"})
	g.dropGone(b)
	if _, ok := g.gone(b); ok {
		t.Error("dropGone kept the parent")
	}

	// Once goneTTL has passed since a is done, the next sweep forgets it.
	g.m[a].gone.done = time.Now().Add(-2 * goneTTL)
	g.swept = time.Time{}
	g.addGone(b, &goneParent{uid: "uid-b"})
	if _, ok := g.gone(a); ok {
		t.Error("a parent done long ago is still remembered")
	}
	if _, ok := g.gone(b); !ok {
		t.Error("the parent just added is not remembered")
	}
}
