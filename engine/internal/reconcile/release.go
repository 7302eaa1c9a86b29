package reconcile

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/engine/internal/watch"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
)

// A rule lets go of a parent it no longer selects: relabelled out of its selector, or
// its `when` turned false. The rule's children of that parent are pruned and its
// finalizer removed, so that deleting the parent later never waits for a rule that no
// longer looks at it.

// releaseGone handles a key whose parent the rule's caches do not hold. A parent that was
// deleted has its children deleted (teardown); one that still exists but that the rule no
// longer selects is released. The API server is asked only when the delete event cannot
// tell which it is: the informer filters by labels, or the delete was found by a relist.
func (d *deletion) releaseGone(ctx context.Context, st *watch.Rule, key watch.Key) (Result, error) {
	g, known := d.memory.gone(key)
	if known && !g.done.IsZero() {
		return Result{}, nil // its children were deleted; this is one of their events
	}
	if !known || !g.sure {
		parent, err := d.send.get(ctx, st.ParentKind.GVR, key.Namespace, key.Name)
		switch {
		case apierrors.IsNotFound(err):
		case apierrors.IsForbidden(err):
			// Outside what the controller may read (a namespace the rule does not name):
			// nothing the rule made can be there.
			klog.FromContext(ctx).V(2).Info("Cannot read parent to release it", "err", err.Error())
			return Result{}, nil
		case err != nil:
			return Result{}, fmt.Errorf("rule %q: read parent %s: %w", st.Rule.Name, key, err)
		case known && parent.GetUID() != g.uid:
			// Deleted and created again: the old parent's children go; the new one's
			// events follow.
		case st.Selects(parent):
			d.memory.dropGone(key)
			return Result{}, nil // the cache has not caught up with it yet; its event follows
		default:
			d.memory.dropGone(key)
			return d.release(ctx, st, parent, "no longer selected by the rule")
		}
	}
	if !known {
		// Gone before this process saw it go (a restart): the owner references and the
		// garbage collector take care of its children.
		return Result{}, nil
	}
	return d.teardown(ctx, st, key, g.uid, g.orphan)
}

// release prunes every child the rule made for parent and removes the rule's finalizer.
// Children are deleted with UID preconditions, a batch per turn; the finalizer goes only
// when every delete was sent.
func (d *deletion) release(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured, why string) (Result, error) {
	children := st.OwnedChildren(string(parent.GetUID()))
	if len(children) == 0 && !Holds(st, parent) {
		return Result{}, nil
	}
	more, _, err := d.letGoBatch(ctx, st, parent, children, false, why)
	switch {
	case err != nil:
		return Result{}, err
	case more:
		return Result{Yield: true}, nil
	case !Holds(st, parent):
		return Result{}, nil
	}
	return Result{}, d.finalizers.remove(ctx, st, parent)
}

// letGoBatch lets go of (letGo) the children not being deleted already, at most a batch
// of them (deletion.batch; failures do not count), and reports whether some were left
// for the parent's next turn. When the parent is gone (being deleted), each delete also
// carries the cached resourceVersion, and changed reports a child that failed it: it
// changed since the cache saw it.
func (d *deletion) letGoBatch(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured, children []*informers.Object, parentGone bool, why string) (more, changed bool, err error) {
	left := d.batch
	var errs []error
	for _, child := range children {
		if child.GetDeletionTimestamp() != nil || d.deleting.pending(child.GetUID()) {
			continue
		}
		if left == 0 {
			more = true
			break
		}
		err := d.letGo(ctx, st, parent, child, parentGone, why)
		switch {
		case parentGone && apierrors.IsConflict(err):
			changed = true
		case err != nil:
			errs = append(errs, err)
		default:
			left--
		}
	}
	return more, changed, errors.Join(errs...)
}
