package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/rules/contract"
)

// Holds reports whether parent carries the rule's finalizer.
func Holds(st *watch.Rule, parent *unstructured.Unstructured) bool {
	return slices.Contains(parent.GetFinalizers(), contract.FinalizerFor(st.Rule.Name))
}

// applyFinalizer server-side applies the parent's metadata with (or without) the rule's
// finalizer. The rule's own field manager owns only that list entry, so adding or
// removing it never touches another rule's finalizer.
func (c *Reconciler) applyFinalizer(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured, present bool) error {
	_, err := c.sendFinalizer(ctx, st, parent, present)
	return err
}

// sendFinalizer is applyFinalizer returning the server's response.
func (c *Reconciler) sendFinalizer(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured, present bool) (*unstructured.Unstructured, error) {
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
		c.finalized.Store(key, struct{}{})
	}
	got, err := c.send.apply(ctx, st.ParentKind.GVR, patch, contract.ParentFieldManager(st.Rule.Name))
	if !present && (apierrors.IsNotFound(err) || otherUID(err)) {
		// Removing from a parent that is gone, or whose name another object now has:
		// there is no finalizer of ours left to remove.
		c.finalized.Delete(key)
		return nil, nil
	}
	if !present && err == nil {
		c.finalized.Delete(key)
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
// stay. Otherwise, when the parent carries the rule's finalizer, kubecel deletes every
// child the rule labelled for this parent, waits until they are gone, then removes the
// finalizer; in a foreground deletion it deletes the children that still point at the
// parent (teardown); in a background one, the parent is gone at once and teardown
// follows its delete event.
func (c *Reconciler) finalize(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured) (Result, error) {
	key := watch.KeyFor(st.Rule.Name, parent)
	switch {
	case hasFinalizer(parent, finalizerOrphan):
		// kubectl delete --cascade=orphan: the children stay. The garbage collector
		// removes their owner references; the rule's finalizer goes at once.
		c.gone.markOrphan(key, parent.GetUID())
		if Holds(st, parent) {
			return Result{}, c.applyFinalizer(ctx, st, parent, false)
		}
		return Result{}, nil
	case !Holds(st, parent) && hasFinalizer(parent, finalizerForeground):
		// Foreground deletion waits for the children: delete them now rather than
		// after the garbage collector's turn.
		return c.teardown(ctx, st, key, parent.GetUID(), false)
	case !Holds(st, parent):
		return Result{}, nil
	}
	children := st.OwnedChildren(string(parent.GetUID()))
	more, err := c.letGoBatch(ctx, st, parent, children, true, "the parent is being deleted")
	switch {
	case err != nil:
		return Result{}, err
	case more:
		return Result{Yield: true}, nil
	}
	if len(children) > 0 {
		// Child delete events requeue the parent; the delay is a safety net.
		return Result{RequeueAfter: 5 * time.Second}, nil
	}
	return Result{}, c.applyFinalizer(ctx, st, parent, false)
}

// MayHold reports whether parent carries the rule's finalizer or may carry it: the
// cached parent shows it, or this reconciler sent it and has not removed it since (the
// cache may not show it yet).
func (c *Reconciler) MayHold(st *watch.Rule, parent *unstructured.Unstructured) bool {
	if Holds(st, parent) {
		return true
	}
	_, sent := c.finalized.Load(watch.KeyFor(st.Rule.Name, parent))
	return sent
}

// ReleaseParent removes the rule's finalizer from a parent of a rule that was removed
// from the rules, so that the parent can still be deleted; its children stay.
func (c *Reconciler) ReleaseParent(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured) error {
	return c.applyFinalizer(ctx, st, parent, false)
}
