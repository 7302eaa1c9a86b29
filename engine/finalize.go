package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/engine/plan"
	"github.com/kubecel/kubecel/rules"
)

// ensureFinalizerFor adds the rule's finalizer to the parent before the first child that
// garbage collection does not delete with it is created (a child in another namespace or
// cluster-scoped, or one kept when the parent is deleted), so that kubecel gets to delete
// or release it.
// The write is recorded in out.
func (c *Controller) ensureFinalizerFor(ctx context.Context, st *ruleState, parent, child *unstructured.Unstructured, out *outcome) error {
	ck := st.children[child.GroupVersionKind().GroupKind()]
	if st.holds(parent) || st.rule.GarbageCollected(st.parentRef(parent), child.GetLabels()[rules.LabelChild], child.GetNamespace(), ck.Namespaced) {
		return nil
	}
	got, err := c.sendFinalizer(ctx, st, parent, true)
	if err != nil {
		return err
	}
	out.record(plan.ActionFinalizer, "", parent.DeepCopy(), got) // parent changes below
	// Later children in this reconcile see it on the cached object's copy.
	parent.SetFinalizers(append(parent.GetFinalizers(), rules.FinalizerFor(st.rule.Name)))
	return nil
}

// holds reports whether parent carries the rule's finalizer.
func (st *ruleState) holds(parent *unstructured.Unstructured) bool {
	return slices.Contains(parent.GetFinalizers(), rules.FinalizerFor(st.rule.Name))
}

// applyFinalizer server-side applies the parent's metadata with (or without) the rule's
// finalizer. The rule's own field manager owns only that list entry, so adding or
// removing it never touches another rule's finalizer.
func (c *Controller) applyFinalizer(ctx context.Context, st *ruleState, parent *unstructured.Unstructured, present bool) error {
	_, err := c.sendFinalizer(ctx, st, parent, present)
	return err
}

// sendFinalizer is applyFinalizer returning the server's response.
func (c *Controller) sendFinalizer(ctx context.Context, st *ruleState, parent *unstructured.Unstructured, present bool) (*unstructured.Unstructured, error) {
	patch := &unstructured.Unstructured{}
	patch.SetAPIVersion(parent.GetAPIVersion())
	patch.SetKind(parent.GetKind())
	patch.SetName(parent.GetName())
	patch.SetNamespace(parent.GetNamespace())
	patch.SetUID(parent.GetUID()) // a precondition: never re-create a parent that is gone
	if present {
		patch.SetFinalizers([]string{rules.FinalizerFor(st.rule.Name)})
	}
	opts := metav1.ApplyOptions{FieldManager: rules.ParentFieldManager(st.rule.Name), Force: true}
	if c.opts.DryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	got, err := c.client.Resource(st.parent.GVR).Namespace(parent.GetNamespace()).Apply(ctx, parent.GetName(), patch, opts)
	if !present && (apierrors.IsNotFound(err) || otherUID(err)) {
		// Removing from a parent that is gone, or whose name another object now has:
		// there is no finalizer of ours left to remove.
		return nil, nil
	}
	if err != nil {
		verb := "add"
		if !present {
			verb = "remove"
		}
		return nil, fmt.Errorf("rule %q: %s finalizer %s: %w", st.rule.Name, verb, rules.FinalizerFor(st.rule.Name), err)
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
func (c *Controller) finalize(ctx context.Context, st *ruleState, parent *unstructured.Unstructured) (result, error) {
	key := keyFor(st, parent)
	switch {
	case hasFinalizer(parent, finalizerOrphan):
		// kubectl delete --cascade=orphan: the children stay. The garbage collector
		// removes their owner references; the rule's finalizer goes at once.
		c.gone.markOrphan(key, parent.GetUID())
		if st.holds(parent) {
			return result{}, c.applyFinalizer(ctx, st, parent, false)
		}
		return result{}, nil
	case !st.holds(parent) && hasFinalizer(parent, finalizerForeground):
		// Foreground deletion waits for the children: delete them now rather than
		// after the garbage collector's turn.
		return c.teardown(ctx, st, key, parent.GetUID(), false)
	case !st.holds(parent):
		return result{}, nil
	}
	children := st.ownedChildren(string(parent.GetUID()))
	more, err := c.letGoBatch(ctx, st, parent, children, true, "the parent is being deleted")
	switch {
	case err != nil:
		return result{}, err
	case more:
		return result{yield: true}, nil
	}
	if len(children) > 0 {
		// Child delete events requeue the parent; the delay is a safety net.
		return result{requeueAfter: 5 * time.Second}, nil
	}
	return result{}, c.applyFinalizer(ctx, st, parent, false)
}
