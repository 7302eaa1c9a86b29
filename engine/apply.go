package engine

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubecel/kubecel/rules"
)

// prepareChild turns a desired child into the object to apply: namespace defaulted to
// the parent's, the namespace rule enforced, kubecel's labels and parent annotation
// added, an owner reference where garbage collection can follow it, and last the hash of
// all that in AnnotationAppliedHash (see needsApply).
func (c *Controller) prepareChild(st *ruleState, parent *unstructured.Unstructured, d rules.Desired) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(d.Object)}
	gk := obj.GroupVersionKind().GroupKind()
	ck := st.children[gk]
	k := keyOf(obj)
	if ck == nil {
		return nil, childError(st.rule.Name, d.ID, k, fmt.Errorf("kind %s is not among the rule's child kinds", gk))
	}
	if obj.GetName() == "" {
		return nil, childError(st.rule.Name, d.ID, k, fmt.Errorf("metadata.name is empty"))
	}
	switch {
	case !ck.Namespaced:
		if obj.GetNamespace() != "" {
			return nil, childError(st.rule.Name, d.ID, k, fmt.Errorf("%s is cluster-scoped but metadata.namespace is %q", gk, obj.GetNamespace()))
		}
	case obj.GetNamespace() == "" && parent.GetNamespace() != "":
		obj.SetNamespace(parent.GetNamespace())
	case obj.GetNamespace() == "":
		return nil, childError(st.rule.Name, d.ID, k, fmt.Errorf("a namespaced child of a cluster-scoped parent needs metadata.namespace"))
	}
	k = keyOf(obj)
	if crossesNamespace(st, parent, obj, ck.Namespaced) && !childByID(st, d.ID).CrossNamespace {
		return nil, childError(st.rule.Name, d.ID, k, fmt.Errorf(
			"the parent is in namespace %q: a cluster-scoped child or one in another namespace needs crossNamespace: true on the child in the rules", parent.GetNamespace()))
	}
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelManagedBy] = ManagedByValue
	labels[LabelRule] = st.rule.Name
	labels[LabelParentUID] = string(parent.GetUID())
	labels[LabelChild] = d.ID
	obj.SetLabels(labels)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationParent] = parentAnnotation(st.parent.GVR, parent.GetNamespace(), parent.GetName())
	obj.SetAnnotations(ann)
	if !crossesNamespace(st, parent, obj, ck.Namespaced) {
		controller := true
		obj.SetOwnerReferences([]metav1.OwnerReference{{
			APIVersion: parent.GetAPIVersion(), Kind: parent.GetKind(),
			Name: parent.GetName(), UID: parent.GetUID(), Controller: &controller,
		}})
	}
	if err := setAppliedHash(obj); err != nil {
		return nil, childError(st.rule.Name, d.ID, k, err)
	}
	return obj, nil
}

// crossesNamespace reports whether garbage collection cannot follow an owner reference
// from obj to parent: a namespaced parent with a cluster-scoped child or a child in
// another namespace.
func crossesNamespace(st *ruleState, parent, obj *unstructured.Unstructured, namespaced bool) bool {
	if !st.parent.Namespaced {
		return false
	}
	return !namespaced || obj.GetNamespace() != parent.GetNamespace()
}

func childByID(st *ruleState, id string) *rules.Child {
	for _, ch := range st.rule.Children {
		if ch.ID == id {
			return ch
		}
	}
	return &rules.Child{ID: id}
}

// apply server-side applies obj with kubecel's field manager, forcing conflicts.
func (c *Controller) apply(ctx context.Context, st *ruleState, child string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ck := st.children[obj.GroupVersionKind().GroupKind()]
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	if c.opts.DryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	got, err := c.client.Resource(ck.GVR).Namespace(obj.GetNamespace()).Apply(ctx, obj.GetName(), obj, opts)
	if err != nil {
		return nil, childError(st.rule.Name, child, keyOf(obj), fmt.Errorf("apply: %w", err))
	}
	c.metrics.applies.WithLabelValues(st.rule.Name).Inc()
	if !c.opts.DryRun {
		c.written.remember(keyOf(got).String(), got)
	}
	return got, nil
}
