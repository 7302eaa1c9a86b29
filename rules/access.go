package rules

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// This file is what a rule needs from the API server's authorization: the controller
// checks it at runtime (SelfSubjectAccessReview) before it starts a rule, and
// `kubecel rbac` prints it as a ClusterRole. Both call Rule.Access.

// The verbs each kind of access needs. Every write kubecel makes is a server-side apply,
// which is a PATCH request; no verb below is "update".
var (
	// Parents are watched through informers, and patched to add or remove the rule's
	// cleanup finalizer. Patch is needed for every parent, not only for rules with
	// crossNamespace children: a rule edited to drop its last such child must still
	// remove the finalizer from the parents that carry it, or they could never be deleted.
	parentVerbs = []string{"get", "list", "watch", "patch"}
	// Status is written by server-side apply to the status subresource.
	statusVerbs = []string{"patch"}
	// Children are watched, created (the first write of a child is an apply that must
	// create it), server-side applied and pruned with a delete; get reads an object whose
	// name a child wants, to tell whether it is ours.
	childVerbs = []string{"get", "list", "watch", "create", "patch", "delete"}
	// The CRD of a rule's api is read, created and server-side applied (a PATCH); never
	// deleted. Its objects are listed in every namespace to count the stored objects
	// an edit of the api would break.
	apiVerbs       = []string{"get", "create", "patch"}
	apiParentVerbs = []string{"list"}
)

// crdResource is the resource of CustomResourceDefinitions.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Access is one resource a rule acts on and the verbs it needs there.
type Access struct {
	Resource    schema.GroupVersionResource
	Subresource string
	// Namespace limits the access to one namespace; "" is every namespace.
	Namespace string
	Verbs     []string
}

// Access lists what the rule needs: its parents in the rule's namespaces (every
// namespace when it names none or the parent is cluster-scoped), their status
// subresource when the rule writes status, and the child resources (children, which the
// caller maps from the rule's child kinds and may extend with kinds an earlier version of
// the rule made) in every namespace, since child informers watch them all; for a rule
// with an api, its CRD, and a list of its parents in every namespace.
func (r *Rule) Access(parentNamespaced bool, children []schema.GroupVersionResource) []Access {
	namespaces := r.Parent.Namespaces
	if len(namespaces) == 0 || !parentNamespaced {
		namespaces = []string{""}
	}
	var out []Access
	for _, ns := range namespaces {
		out = append(out, Access{Resource: r.Parent.GVR, Namespace: ns, Verbs: slices.Clone(parentVerbs)})
		if r.HasStatus {
			out = append(out, Access{Resource: r.Parent.GVR, Subresource: "status", Namespace: ns, Verbs: slices.Clone(statusVerbs)})
		}
	}
	if r.api != nil {
		out = append(out, Access{Resource: crdResource, Verbs: slices.Clone(apiVerbs)},
			Access{Resource: r.Parent.GVR, Verbs: slices.Clone(apiParentVerbs)})
	}
	seen := map[schema.GroupResource]bool{}
	for _, gvr := range children {
		if seen[gvr.GroupResource()] {
			continue
		}
		seen[gvr.GroupResource()] = true
		out = append(out, Access{Resource: gvr, Verbs: slices.Clone(childVerbs)})
	}
	return out
}

// refVerbs: refs are read from informers, which list and watch.
var refVerbs = []string{"list", "watch"}

// RefAccess is what reading ref needs, once its resource (gvr) and scope are known: list
// and watch in each namespace RefNamespaces names, or everywhere for a cluster-scoped
// kind.
func (r *Rule) RefAccess(ref *Ref, gvr schema.GroupVersionResource, namespaced bool) []Access {
	namespaces := []string{""}
	if namespaced {
		namespaces = r.RefNamespaces(ref)
	}
	out := make([]Access, len(namespaces))
	for i, ns := range namespaces {
		out[i] = Access{Resource: gvr, Namespace: ns, Verbs: slices.Clone(refVerbs)}
	}
	return out
}
