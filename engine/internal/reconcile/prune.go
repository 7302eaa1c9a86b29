package reconcile

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/engine/plan"
)

// prune deletes the objects labelled for this rule and parent that the rule no longer
// produces. Children that wait for dependencies or failed to evaluate are kept.
func (c *Reconciler) prune(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured, out *outcome) []error {
	wanted := map[watch.ObjectKey]bool{}
	keep := map[string]bool{}
	if !out.result.Skip {
		shaped, err := c.children.shape(st, parent, out.result.Children)
		if err != nil {
			return []error{err} // cannot tell what is wanted: prune nothing
		}
		for _, d := range shaped {
			wanted[watch.KeyOf(&unstructured.Unstructured{Object: d.Object})] = true
		}
		for _, w := range out.result.Waiting {
			keep[w.ID] = true
		}
		for _, id := range out.result.Failed {
			keep[id] = true
		}
	}
	return c.deletion.prune(ctx, st, parent, out, wanted, keep)
}

// prune lets go of the parent's children but the objects wanted and the children keep
// (by id), a batch at most (out.left), and records each in out.
func (d *deletion) prune(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured, out *outcome, wanted map[watch.ObjectKey]bool, keep map[string]bool) []error {
	var errs []error
	for _, child := range st.OwnedChildren(string(parent.GetUID())) {
		k := watch.KeyOf(child)
		id := child.Child()
		if wanted[k] || keep[id] || child.GetDeletionTimestamp() != nil || d.deleting.pending(child.GetUID()) {
			continue
		}
		if out.spent() {
			break
		}
		if err := d.letGo(ctx, st, parent, child, false, fmt.Sprintf("child %q no longer produced", id)); err != nil {
			errs = append(errs, err)
			continue
		}
		out.left-- // failures do not count: each turn then makes progress
		action := plan.ActionPrune
		if keeps(st, id, false) {
			action = plan.ActionRelease
		}
		out.record(action, id, child.Identity(), nil) // names the object only
	}
	return errs
}

// letGo deletes a child the rule no longer wants, or releases it when the child's
// lifecycle keeps it (parentGone: because its parent is being deleted), and says so in
// the log and an Event on the parent.
func (d *deletion) letGo(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured, child *informers.Object, parentGone bool, why string) error {
	k := shown(st, child.Child(), watch.KeyOf(child))
	if keeps(st, child.Child(), parentGone) {
		if err := d.releaseChild(ctx, st, child); err != nil {
			return err
		}
		d.metrics.Releases.WithLabelValues(st.Rule.Name).Inc()
		klog.FromContext(ctx).Info("Released child", "child", child.Child(), "object", k, "why", why, "dryRun", d.dryRun)
		d.events.event(parent, "Normal", "Released", "released %s (%s; lifecycle Keep)", k, why)
		return nil
	}
	if err := d.deleteChild(ctx, st, child, parentGone); err != nil {
		return err
	}
	if !parentGone {
		d.metrics.Prunes.WithLabelValues(st.Rule.Name).Inc()
	}
	klog.FromContext(ctx).Info("Deleted child", "child", child.Child(), "object", k, "why", why, "dryRun", d.dryRun)
	reason := "Pruned"
	if parentGone {
		reason = "Deleted"
	}
	d.events.event(parent, "Normal", reason, "deleted %s (%s)", k, why)
	return nil
}

// deleteChild deletes one child, on the condition that it is still the object we saw
// (same UID): an object recreated under the same name by someone else is never touched.
// When exact, the cached resourceVersion is a condition too, and a child that changed
// since the cache saw it is a conflict, returned.
func (d *deletion) deleteChild(ctx context.Context, st *watch.Rule, child *informers.Object, exact bool) error {
	err := d.sendDelete(ctx, st, child, exact)
	if apierrors.IsConflict(err) && !exact {
		return nil // replaced by another object (UID precondition): nothing to do
	}
	return err
}

// sendDelete deletes one child with a precondition on its cached UID and, when exact,
// on its cached resourceVersion too. A child that is gone already is not an error; one
// that fails a precondition is a conflict, returned as the server's error.
func (d *deletion) sendDelete(ctx context.Context, st *watch.Rule, child *informers.Object, exact bool) error {
	ck := st.Children[child.GetObjectKind().GroupVersionKind().GroupKind()]
	pre := &metav1.Preconditions{UID: ptr.To(child.GetUID())}
	if exact {
		pre.ResourceVersion = ptr.To(child.GetResourceVersion())
	}
	err := d.send.delete(ctx, ck.GVR, child.GetNamespace(), child.GetName(), pre)
	switch {
	case err == nil && !d.dryRun:
		d.deleting.sent(child.GetUID())
		return nil
	case err == nil || apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return err
	}
	return fmt.Errorf("rule %q child %q: delete %s: %w", st.Rule.Name, child.Child(), shown(st, child.Child(), watch.KeyOf(child)), withheldFor(st, child.Child(), err))
}
