package reconcile

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/engine/plan"
	"github.com/kubecel/kubecel/rules/contract"
)

// markRevision records on the parent which revision of the rule its children were
// applied at, for the rule's rollouts: the annotation contract.RevisionAnnotation, with
// the field manager contract.RevisionFieldManager, written after the status once the
// reconcile applied everything. A rule without a rollout policy records none, and takes
// away what it recorded before, so that an annotation always names the revision a
// policy rolled out.
func (c *reporter) markRevision(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured, out *outcome) error {
	if !out.synced() || out.statusErr != nil || out.result == nil || out.result.Skip || !st.Rule.HasStatus {
		return nil
	}
	key := contract.RevisionAnnotation(st.Rule.Name)
	want := ""
	if st.Rule.Rollout != nil {
		want = st.Rule.Revision
	}
	current := parent
	memo := watch.StatusMemo(st.Rule.Name, parent.GetUID())
	if mine := c.written.Newer(memo, parent); mine != nil {
		current = mine
	}
	recorded := func(u *unstructured.Unstructured) bool {
		have, has := u.GetAnnotations()[key]
		return want == "" && !has || want != "" && have == want
	}
	if recorded(current) {
		return nil
	}
	// The parent this reconcile read may be older than the cache now: the echo of a
	// write made since (this reconcile's status write, or the record itself by the
	// turn before) lets the memory of that write go. Look at the cache once more
	// before writing.
	if latest, ok, err := st.Get(watch.KeyFor(st.Rule.Name, parent)); err == nil && ok && latest.GetUID() == parent.GetUID() && recorded(latest) {
		return nil
	}
	patch := &unstructured.Unstructured{}
	patch.SetAPIVersion(parent.GetAPIVersion())
	patch.SetKind(parent.GetKind())
	patch.SetName(parent.GetName())
	patch.SetNamespace(parent.GetNamespace())
	patch.SetUID(parent.GetUID()) // a precondition: never re-create a parent that is gone
	if want != "" {
		patch.SetAnnotations(map[string]string{key: want})
	}
	got, err := c.send.remembered(memo, seenParent(parent, key), func() (*unstructured.Unstructured, error) {
		return c.send.apply(ctx, st.ParentKind.GVR, patch, contract.RevisionFieldManager(st.Rule.Name))
	})
	if err != nil {
		if otherUID(err) {
			return nil // the parent is gone or replaced: nothing to record on it
		}
		return fmt.Errorf("rule %q: record revision %s on the parent: %w", st.Rule.Name, st.Rule.Revision, err)
	}
	out.record(plan.ActionStatus, "", current, got)
	return nil
}
