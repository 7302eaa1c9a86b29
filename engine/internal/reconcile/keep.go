package reconcile

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/rules/contract"
)

// A child with lifecycle Keep (rules/lifecycle.go) is released instead of deleted: when
// the rule stops producing it (onRemove), or when its parent is deleted (onParentDelete).
// Releasing removes the owner reference to the parent and kubecel's labels and
// annotations, and marks the object with the rule that released it and the parent it
// came from. Without kubecel's managed-by label it leaves the child informers, so nothing
// of kubecel reads or writes it again.

// keeps reports whether the rule releases its child id's objects rather than deleting
// them: when the parent is deleted (parentGone), or when it is no longer produced.
func keeps(st *watch.Rule, id string, parentGone bool) bool {
	ch := st.Child(id)
	if parentGone {
		return ch.KeepOnParentDelete
	}
	return ch.KeepOnRemove
}

// releaseChild lets go of a child as the cache shows it: the patch carries the cached
// resourceVersion, so a child that changed since, or was deleted and created again, is a
// conflict and is left alone. A child that is gone is not an error.
func (d *deletion) releaseChild(ctx context.Context, st *watch.Rule, child *informers.Object) error {
	obj, err := child.Decode()
	if err != nil {
		return err
	}
	var refs []any
	for _, r := range obj.GetOwnerReferences() {
		if r.UID != types.UID(child.ParentUID()) {
			refs = append(refs, r)
		}
	}
	md := map[string]any{
		"resourceVersion": child.GetResourceVersion(),
		"labels": map[string]any{
			contract.LabelManagedBy: nil, contract.LabelRule: nil, contract.LabelParentUID: nil, contract.LabelChild: nil, contract.LabelBucket: nil,
			contract.LabelInstallation: nil,
			contract.LabelReleased:     st.Rule.Name,
		},
		"annotations": map[string]any{
			contract.AnnotationParent: nil, contract.AnnotationAppliedHash: nil, contract.AnnotationProof: nil, contract.AnnotationOrigin: nil,
			contract.AnnotationReleasedFrom: child.Parent(),
		},
		"ownerReferences": refs, // a merge patch replaces the list
	}
	patch, err := json.Marshal(map[string]any{"metadata": md})
	if err != nil {
		return err
	}
	ck := st.Children[child.GetObjectKind().GroupVersionKind().GroupKind()]
	err = d.send.mergePatch(ctx, ck.GVR, child.GetNamespace(), child.GetName(), patch, contract.FieldManager)
	switch {
	case err == nil || apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return err
	}
	return fmt.Errorf("rule %q child %q: release %s: %w", st.Rule.Name, child.Child(), shown(st, child.Child(), watch.KeyOf(child)), withheldFor(st, child.Child(), err))
}
