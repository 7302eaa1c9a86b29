package rules

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/internal/ujson"
	"github.com/kubecel/kubecel/rules/contract"
)

// This file is the child contract: how an evaluated child becomes the object the
// controller applies, which parents a rule takes, and how observed objects become the
// `children` variable. The controller, `kubecel render`, `kubecel plan` and the example
// tests all call these functions, so what render prints is what run applies.

// ParentRef is what the child contract needs to know of a parent.
type ParentRef struct {
	APIVersion, Kind string
	// Resource is the parent's group and resource, for the kubecel.dev/parent annotation.
	Resource        schema.GroupResource
	Namespace, Name string
	UID             string
	// Namespaced is the parent resource's scope.
	Namespaced bool
}

// ParentRefOf describes a parent object of resource gr.
func ParentRefOf(obj map[string]any, gr schema.GroupResource, namespaced bool) ParentRef {
	md, _ := obj["metadata"].(map[string]any)
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	return ParentRef{
		APIVersion: str(obj, "apiVersion"), Kind: str(obj, "kind"), Resource: gr,
		Namespace: str(md, "namespace"), Name: str(md, "name"), UID: str(md, "uid"),
		Namespaced: namespaced,
	}
}

// Annotation is the value of AnnotationParent on the parent's children:
// group/resource/namespace/name.
func (p ParentRef) Annotation() string {
	return fmt.Sprintf("%s/%s/%s/%s", p.Resource.Group, p.Resource.Resource, p.Namespace, p.Name)
}

// Selects reports whether the rule's namespaces and label selector take a parent in
// namespace with these labels. Namespaces apply to namespaced parents only. (The rule's
// `when` is evaluated with the parent: Result.Skip.)
func (r *Rule) Selects(namespace string, namespaced bool, lbls map[string]string) bool {
	if ns := r.Parent.Namespaces; namespaced && len(ns) > 0 && !slices.Contains(ns, namespace) {
		return false
	}
	return r.Parent.Selector == nil || r.Parent.Selector.Matches(labels.Set(lbls))
}

// ChildError is a desired child that cannot be applied as it is.
type ChildError struct {
	Rule, Child string
	// Object names the object: Kind[.group] [namespace/]name.
	Object  string
	Message string
}

func (e *ChildError) Error() string {
	return fmt.Sprintf("rule %q child %q: %s: %s", e.Rule, e.Child, e.Object, e.Message)
}

// ObjectName is how errors and logs name an object: "Kind[.group] namespace/name", or
// "Kind[.group]/name" when it is cluster-scoped.
func ObjectName(gk schema.GroupKind, namespace, name string) string {
	kind := gk.Kind
	if gk.Group != "" {
		kind += "." + gk.Group
	}
	if namespace == "" {
		return kind + "/" + name
	}
	return kind + " " + namespace + "/" + name
}

// Shape turns desired children of parent p, as this rule's Result gives them, into the
// objects the controller applies, in one call: each is a copy of its manifest with its
// namespace defaulted to the parent's, kubecel's labels and annotations, an owner
// reference (controller: true) where Kubernetes garbage collection is to delete it with
// the parent (GarbageCollected), and last the hash of all that in AnnotationAppliedHash.
// It returns them in order, each with its ID, Index, Observed and Ready, and its Object
// shaped.
//
// scope tells the scope of a child's kind; an error from it fails that child. A
// namespaced parent's child that is cluster-scoped or in another namespace needs
// crossNamespace: true on the child. A child that cannot be applied as it is (that, no
// name, an unknown scope) is left out, and the error holds a *ChildError for each.
//
// id is the installation that applies the children: its name goes into
// LabelInstallation and its proof of each child into AnnotationProof (identity.go). A
// nil id (offline) writes DefaultInstallation and PlaceholderProof.
func (r *Rule) Shape(id *Identity, p ParentRef, scope func(apiVersion, kind string) (namespaced bool, err error), desired ...Desired) ([]Desired, error) {
	shaped := make([]Desired, 0, len(desired))
	var errs []error
	for _, d := range desired {
		obj, err := r.shape(id, p, d, scope)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d.Object = obj
		shaped = append(shaped, d)
	}
	if len(errs) == 1 {
		return shaped, errs[0]
	}
	return shaped, errors.Join(errs...)
}

// shape shapes one desired child (see Shape).
func (r *Rule) shape(id *Identity, p ParentRef, d Desired, scope func(apiVersion, kind string) (bool, error)) (map[string]any, error) {
	obj := runtime.DeepCopyJSON(d.Object)
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, _ := schema.ParseGroupVersion(apiVersion)
	gk := schema.GroupKind{Group: gv.Group, Kind: kind}
	name, _ := md["name"].(string)
	namespace, _ := md["namespace"].(string)
	fail := func(format string, args ...any) error {
		return &ChildError{Rule: r.Name, Child: d.ID, Object: r.ShowObject(d.ID, gk, namespace, name), Message: fmt.Sprintf(format, args...)}
	}
	if r.child(d.ID) == nil {
		return nil, fail("the rule has no child of that id")
	}
	if name == "" {
		return nil, fail("metadata.name is empty")
	}
	childNamespaced, err := scope(apiVersion, kind)
	if err != nil {
		return nil, fail("%v", err)
	}
	switch {
	case !childNamespaced && namespace != "":
		return nil, fail("%s is cluster-scoped but metadata.namespace is %q", gk, namespace)
	case childNamespaced && namespace == "" && p.Namespace != "":
		namespace = p.Namespace
		md["namespace"] = namespace
	case childNamespaced && namespace == "":
		return nil, fail("a namespaced child of a cluster-scoped parent needs metadata.namespace")
	}
	crosses := p.crossesNamespace(namespace, childNamespaced)
	if crosses && !r.child(d.ID).CrossNamespace {
		return nil, fail("the parent is in namespace %q: a cluster-scoped child or one in another namespace needs crossNamespace: true on the child in the rules", p.Namespace)
	}
	lbls, _ := md["labels"].(map[string]any)
	if lbls == nil {
		lbls = map[string]any{}
	}
	lbls[contract.LabelManagedBy] = contract.ManagedByValue
	lbls[contract.LabelRule] = r.Name
	lbls[contract.LabelParentUID] = p.UID
	lbls[contract.LabelChild] = d.ID
	lbls[contract.LabelBucket] = contract.BucketLabel(contract.Bucket(p.Namespace, p.Name))
	md["labels"] = lbls
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
	}
	ann[contract.AnnotationParent] = p.Annotation()
	lbls[contract.LabelInstallation] = id.Name()
	if r.Origin != "" {
		ann[contract.AnnotationOrigin] = r.Origin
	}
	ann[contract.AnnotationProof] = id.Proof(ChildClaim{
		GK: gk, Namespace: namespace, Name: name, Installation: id.Name(), Rule: r.Name, Origin: r.Origin,
		ParentUID: p.UID, Parent: p.Annotation(), Child: d.ID,
	})
	md["annotations"] = ann
	if r.GarbageCollected(p, d.ID, namespace, childNamespaced) {
		md["ownerReferences"] = []any{map[string]any{
			"apiVersion": p.APIVersion, "kind": p.Kind, "name": p.Name, "uid": p.UID, "controller": true,
		}}
	}
	hash, err := AppliedHash(obj)
	if err != nil {
		return nil, fail("%v", err)
	}
	ann[contract.AnnotationAppliedHash] = hash
	return obj, nil
}

// AppliedHash is the value of AnnotationAppliedHash for a shaped child: a hash of the
// object without that annotation and without its proof, so that what render prints
// offline (PlaceholderProof) carries the hash the controller writes. 128 bits: two
// versions of one child never collide, and each cached child pays for the annotation's
// incompressible text.
func AppliedHash(obj map[string]any) (string, error) {
	text, err := ujson.Marshal(withoutAnnotations(obj, contract.AnnotationAppliedHash, contract.AnnotationProof))
	if err != nil {
		return "", fmt.Errorf("encode: %w", err)
	}
	sum := sha256.Sum256(text)
	return base64.RawURLEncoding.EncodeToString(sum[:16]), nil
}

// WithoutAppliedHash returns obj without AnnotationAppliedHash, sharing with obj what it
// does not change.
func WithoutAppliedHash(obj map[string]any) map[string]any {
	return withoutAnnotations(obj, contract.AnnotationAppliedHash)
}

// withoutAnnotations returns obj without the annotations keys, sharing with obj what it
// does not change.
func withoutAnnotations(obj map[string]any, keys ...string) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	if !slices.ContainsFunc(keys, func(k string) bool { _, ok := ann[k]; return ok }) {
		return obj
	}
	ann = maps.Clone(ann)
	for _, k := range keys {
		delete(ann, k)
	}
	md = maps.Clone(md)
	md["annotations"] = ann
	if len(ann) == 0 {
		delete(md, "annotations")
	}
	out := maps.Clone(obj)
	out["metadata"] = md
	return out
}

// crossesNamespace reports whether garbage collection cannot follow an owner reference
// from a child in namespace (childNamespaced says whether its kind is namespaced) to p:
// the parent is namespaced and the child is cluster-scoped or in another namespace.
func (p ParentRef) crossesNamespace(namespace string, childNamespaced bool) bool {
	return p.Namespaced && (!childNamespaced || namespace != p.Namespace)
}

// Observe groups objects into the `children` variable: each object carrying a
// kubecel.dev/child label, and no kubecel.dev/rule label of another rule, goes under its
// child id. The caller picks the objects of the parent (the controller by the parent-uid
// label).
func (r *Rule) Observe(objs []map[string]any) Observed {
	obs := Observed{}
	for _, obj := range objs {
		md, _ := obj["metadata"].(map[string]any)
		lbls, _ := md["labels"].(map[string]any)
		id, _ := lbls[contract.LabelChild].(string)
		if rule, ok := lbls[contract.LabelRule].(string); id == "" || ok && rule != r.Name {
			continue
		}
		obs[id] = append(obs[id], obj)
	}
	return obs
}

// child returns the rule's child of that id, or nil.
func (r *Rule) child(id string) *Child {
	for _, c := range r.Children {
		if c.ID == id {
			return c
		}
	}
	return nil
}
