package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/engine/plan"
	"github.com/kubecel/kubecel/rules/contract"
)

// Holds reports whether parent carries the rule's finalizer.
func Holds(st *watch.Rule, parent *unstructured.Unstructured) bool {
	return slices.Contains(parent.GetFinalizers(), contract.FinalizerFor(st.Rule.Name))
}

// finalizers adds the rules' finalizers to parents and removes them. Each rule's
// finalizer is server-side applied with the rule's own field manager, which owns only
// that list entry, so adding or removing it never touches another rule's finalizer; the
// apply carries the parent's UID, so it never re-creates a parent that is gone.
//
// It remembers the parents it sent a rule's finalizer to and has not removed it from
// since (parentMemo.finalizerSent), so that a rule's release finds them before the cache
// shows the finalizer (mayHold).
type finalizers struct {
	send   writer
	memory *memory
}

// ensureFor adds the rule's finalizer to the parent before the first child that
// garbage collection does not delete with it is created (a child in another namespace or
// cluster-scoped, or one kept when the parent is deleted), so that kubecel gets to delete
// or release it.
// The write is recorded in out.
func (f *finalizers) ensureFor(ctx context.Context, st *watch.Rule, parent, child *unstructured.Unstructured, out *outcome) error {
	ck := st.Children[child.GroupVersionKind().GroupKind()]
	if Holds(st, parent) || st.Rule.GarbageCollected(st.ParentRef(parent), child.GetLabels()[contract.LabelChild], child.GetNamespace(), ck.Namespaced) {
		return nil
	}
	got, err := f.set(ctx, st, parent, true)
	if err != nil {
		return err
	}
	out.record(plan.ActionFinalizer, "", parent.DeepCopy(), got) // parent changes below
	// Later children in this reconcile see it on the cached object's copy.
	parent.SetFinalizers(append(parent.GetFinalizers(), contract.FinalizerFor(st.Rule.Name)))
	return nil
}

// remove removes the rule's finalizer from parent. A parent that is gone, or whose name
// another object now has, holds no finalizer of ours: that is not an error.
func (f *finalizers) remove(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured) error {
	_, err := f.set(ctx, st, parent, false)
	return err
}

// set server-side applies the parent's metadata with (present) or without the rule's
// finalizer, and returns the server's response.
func (f *finalizers) set(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured, present bool) (*unstructured.Unstructured, error) {
	patch := &unstructured.Unstructured{}
	patch.SetAPIVersion(parent.GetAPIVersion())
	patch.SetKind(parent.GetKind())
	patch.SetName(parent.GetName())
	patch.SetNamespace(parent.GetNamespace())
	patch.SetUID(parent.GetUID()) // a precondition: never re-create a parent that is gone
	key := watch.KeyFor(st.Rule.Name, parent)
	if present {
		patch.SetFinalizers([]string{contract.FinalizerFor(st.Rule.Name)})
		// Before it is sent: an add that fails may still have been made.
		f.memory.update(key, func(p *parentMemo) { p.finalizerSent = true })
	}
	got, err := f.send.apply(ctx, st.ParentKind.GVR, patch, contract.ParentFieldManager(st.Rule.Name))
	if !present && (apierrors.IsNotFound(err) || otherUID(err)) {
		// Removing from a parent that is gone, or whose name another object now has:
		// there is no finalizer of ours left to remove.
		f.memory.update(key, func(p *parentMemo) { p.finalizerSent = false })
		return nil, nil
	}
	if !present && err == nil {
		f.memory.update(key, func(p *parentMemo) { p.finalizerSent = false })
	}
	if err != nil {
		verb := "add"
		if !present {
			verb = "remove"
		}
		return nil, fmt.Errorf("rule %q: %s finalizer %s: %w", st.Rule.Name, verb, contract.FinalizerFor(st.Rule.Name), err)
	}
	return got, nil
}

// otherUID reports whether an apply failed on its UID precondition: with no object of
// that name the server answers 409 "uid mismatch" (a forced apply has no other conflict),
// with an object of another UID 422 "metadata.uid: field is immutable".
func otherUID(err error) bool {
	if apierrors.IsConflict(err) {
		return true
	}
	if !apierrors.IsInvalid(err) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == "metadata.uid" {
			return true
		}
	}
	return false
}

// finalize handles a parent being deleted. Deleted with the orphan policy, its children
// stay (deletedWithOrphan). Otherwise, when the parent carries the rule's finalizer,
// kubecel deletes every child the rule labelled for this parent, waits until they are
// gone, then removes the finalizer; in a foreground deletion it deletes the children
// that still point at the parent (teardown); in a background one, the parent is gone at
// once and teardown follows its delete event.
func (d *deletion) finalize(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured) (Result, error) {
	key := watch.KeyFor(st.Rule.Name, parent)
	children := st.OwnedChildren(string(parent.GetUID()))
	orphan, err := deletedWithOrphan(st, key, parent, children)
	switch {
	case err != nil:
		return Result{}, err
	case orphan:
		// kubectl delete --cascade=orphan: the children stay. The garbage collector
		// removes their owner references; the rule's finalizer goes at once.
		d.memory.update(key, func(p *parentMemo) { p.gone = &goneParent{uid: parent.GetUID(), orphan: true} })
		if Holds(st, parent) {
			return Result{}, d.finalizers.remove(ctx, st, parent)
		}
		return Result{}, nil
	case !Holds(st, parent) && hasFinalizer(parent, finalizerForeground):
		// Foreground deletion waits for the children: delete them now rather than
		// after the garbage collector's turn.
		return d.teardown(ctx, st, key, parent.GetUID(), false)
	case !Holds(st, parent):
		return Result{}, nil
	}
	more, changed, err := d.letGoBatch(ctx, st, parent, children, true, "the parent is being deleted")
	switch {
	case err != nil:
		return Result{}, err
	case changed:
		// A child changed since the cache saw it (the garbage collector may have
		// orphaned it): look again once the cache has caught up.
		return Result{RequeueAfter: time.Second}, nil
	case more:
		return Result{Yield: true}, nil
	}
	switch {
	case len(children) > 0:
		// Child delete events requeue the parent; the delay is a safety net.
		return Result{RequeueAfter: 5 * time.Second}, nil
	case d.unseen(st, parent.GetUID()):
		// A child we made is not in the caches yet: its event requeues the parent,
		// which deletes it then. Without the finalizer it would be left behind.
		return Result{RequeueAfter: time.Second}, nil
	}
	return Result{}, d.finalizers.remove(ctx, st, parent)
}

// unseen reports whether a child of the parent with UID uid that we wrote is not in the
// caches yet (informers.Written): the caches lag behind our writes, and a parent let go
// of before they catch up would leave that child behind. A child the cache holds under
// its name with its UID is seen, whoever changed it since; one of a kind the rule no
// longer watches cannot be, and holds nothing up.
func (d *deletion) unseen(st *watch.Rule, uid types.UID) bool {
	if d.send.written == nil {
		return false
	}
	for _, w := range d.send.written.Children(string(uid)) {
		k := watch.KeyOf(w)
		if st.Children[k.GK] == nil {
			continue
		}
		if cached, ok := st.Cached(k); !ok || cached.GetUID() != w.GetUID() {
			return true
		}
	}
	return false
}

// deletedWithOrphan reports whether parent, which is being deleted, was deleted with the
// orphan propagation policy. It was when it carries the orphan finalizer, or when its
// informer saw it carry that finalizer (the garbage collector removes it once it has
// orphaned the dependents, and the rule's finalizer keeps the parent terminating), or
// when a child that garbage collection follows no longer has its owner reference to the
// parent: the garbage collector orphaned it, before this process saw the parent (a
// restart). kubecel gives such children the owner reference in the apply that makes
// them, so only an orphaning (or someone else's edit) removes it, and a wrong answer
// keeps children rather than deleting them.
func deletedWithOrphan(st *watch.Rule, key watch.Key, parent *unstructured.Unstructured, children []*informers.Object) (bool, error) {
	if cached, ok := st.CachedParent(key); hasFinalizer(parent, finalizerOrphan) || ok && cached.DeletedWithOrphan() {
		return true, nil
	}
	for _, child := range children {
		if child.GetDeletionTimestamp() != nil {
			continue
		}
		owned, err := stillChildOf(st, key, parent.GetUID(), child)
		if err != nil {
			return false, err
		}
		if !owned {
			return true, nil
		}
	}
	return false, nil
}

// mayHold reports whether parent carries the rule's finalizer or may carry it: the
// cached parent shows it, or it was sent and has not been removed since (the cache may
// not show it yet).
func (f *finalizers) mayHold(st *watch.Rule, parent *unstructured.Unstructured) bool {
	if Holds(st, parent) {
		return true
	}
	return f.memory.view(watch.KeyFor(st.Rule.Name, parent)).finalizerSent
}
