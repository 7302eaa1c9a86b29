package engine

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/rules"
)

// Whether an object is a parent's child is decided before the first write to it, never
// by the write: kubecel creates its children and does not take over what it finds.
//
//   - An object the child informers hold (they see only kubecel's objects) that carries
//     another rule's or parent's labels is a conflict, found without a request.
//   - An object the caches do not show is created with a server-side apply that carries
//     a resourceVersion precondition no stored object can meet (createOnly): the server
//     creates it if the name is free and answers 409 Conflict if any object has it. A
//     create is still one write, owned by the apply field manager like every later one.
//   - On that 409 kubecel reads the object: labelled for this rule and parent, it is ours
//     (the cache lags our own create) and is applied; without any kubecel parent and
//     without a controller, it is adopted only when the child says adopt: true; anything
//     else is a ChildExists conflict reported on the parent, and the object is left as it
//     is, never pruned (it does not carry our labels).

// createOnly is a resourceVersion no stored object has: etcd revisions are positive
// int64s, so the largest uint64 never matches, and on a create the server ignores it.
const createOnly = "18446744073709551615"

// conflictError reports a child whose name is held by an object that is not this
// parent's child.
type conflictError struct {
	rule, child string
	obj         objectKey
	holder      string
}

func (e *conflictError) Error() string {
	return fmt.Sprintf("rule %q child %q: %s already exists and %s; kubecel does not take over objects it did not create: delete or rename that object, or change the child's name", e.rule, e.child, e.obj, e.holder)
}

// isConflict reports whether err holds a conflictError.
func isConflict(err error) bool {
	var c *conflictError
	return errors.As(err, &c)
}

// holderOf says who holds obj when it is not (rule, parentUID)'s child, or "" when it is.
// A child that kubecel made for the same parent under a rule that no longer exists
// (removed or renamed; live says which rules do) is the parent's to take.
func holderOf(rule, parentUID string, labels, annotations map[string]string, owners []metav1.OwnerReference, live func(rule string) bool) string {
	kubecel := labels[rules.LabelManagedBy] == rules.ManagedByValue
	switch {
	case kubecel && labels[rules.LabelParentUID] == parentUID && (labels[rules.LabelRule] == rule || !live(labels[rules.LabelRule])):
		return ""
	case kubecel && labels[rules.LabelParentUID] != "":
		who := annotations[rules.AnnotationParent]
		if who == "" {
			who = "uid " + labels[rules.LabelParentUID]
		}
		return fmt.Sprintf("belongs to parent %s of rule %q", who, labels[rules.LabelRule])
	}
	for _, o := range owners {
		if o.Controller != nil && *o.Controller {
			return fmt.Sprintf("is controlled by %s %s", o.Kind, o.Name)
		}
	}
	return "was not created by kubecel for this parent"
}

// adoptable reports whether an existing object that is not ours may be adopted by a child
// that opts in: it belongs to no other kubecel parent and has no controller.
func adoptable(obj *unstructured.Unstructured) bool {
	if obj.GetLabels()[rules.LabelParentUID] != "" {
		return false
	}
	return metav1.GetControllerOfNoCopy(obj) == nil
}

// cachedHolder looks for obj in its kind's child cache: when an object of that name is
// cached (so kubecel labelled it) for another rule or parent, it says who holds it.
func (c *Controller) cachedHolder(st *ruleState, parentUID string, obj *unstructured.Unstructured) string {
	ck := st.children[obj.GroupVersionKind().GroupKind()]
	if ck == nil || ck.watch == nil {
		return ""
	}
	key := obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		key = ns + "/" + key
	}
	item, ok, err := ck.watch.Informer.GetStore().GetByKey(key)
	if err != nil || !ok {
		return ""
	}
	o := item.(*informers.Object)
	labels := map[string]string{rules.LabelManagedBy: rules.ManagedByValue, rules.LabelRule: o.Rule(), rules.LabelParentUID: o.ParentUID()}
	return holderOf(st.rule.Name, parentUID, labels, map[string]string{rules.AnnotationParent: o.Parent()}, nil, c.ruleKnown)
}

// ruleKnown reports whether a rule of that name runs or waits to run.
func (c *Controller) ruleKnown(name string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rules[name] != nil || c.pending[name] != nil
}

// create writes a child that the caches do not show: created when its name is free; when
// it is taken, applied only if the object turns out to be ours or adoptable.
func (c *Controller) create(ctx context.Context, st *ruleState, parent *unstructured.Unstructured, child string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	uid := string(parent.GetUID())
	k := keyOf(obj)
	if holder := c.cachedHolder(st, uid, obj); holder != "" {
		return nil, &conflictError{rule: st.rule.Name, child: child, obj: k, holder: holder}
	}
	first := obj.DeepCopy()
	first.SetResourceVersion(createOnly)
	got, err := c.apply(ctx, st, child, first)
	if err == nil || !apierrors.IsConflict(err) {
		return got, err
	}
	ck := st.children[obj.GroupVersionKind().GroupKind()]
	existing, gerr := c.client.Resource(ck.GVR).Namespace(obj.GetNamespace()).Get(ctx, obj.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(gerr):
		// Deleted in between: the next reconcile creates it.
		return nil, childError(st.rule.Name, child, k, fmt.Errorf("the name was taken and is free again: %w", err))
	case gerr != nil:
		return nil, childError(st.rule.Name, child, k, fmt.Errorf("read the existing object: %w", gerr))
	}
	holder := holderOf(st.rule.Name, uid, existing.GetLabels(), existing.GetAnnotations(), existing.GetOwnerReferences(), c.ruleKnown)
	switch {
	case holder == "":
		return c.apply(ctx, st, child, obj) // ours: the cache has not seen our create yet
	case childByID(st, child).Adopt && adoptable(existing):
		got, err := c.apply(ctx, st, child, obj)
		if err == nil {
			klog.FromContext(ctx).Info("Adopted existing object", "child", child, "object", k.String())
			c.event(parent, "Normal", rules.ReasonAdopted, "adopted existing %s as child %q (adopt: true)", k, child)
		}
		return got, err
	}
	return nil, &conflictError{rule: st.rule.Name, child: child, obj: k, holder: holder}
}
