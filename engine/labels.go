package engine

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules"
)

// FieldManager is the server-side apply field manager of every write to a child.
const FieldManager = "kubecel"

// ParentFieldManager is the field manager of one rule's writes to its parents: its
// finalizer and its status. Each rule has its own, so that one rule's apply never removes
// what another rule wrote on the same parent.
func ParentFieldManager(rule string) string { return FieldManager + "/" + rule }

// ourManager reports whether a managedFields entry's manager is one of kubecel's.
func ourManager(manager string) bool {
	return manager == FieldManager || strings.HasPrefix(manager, FieldManager+"/")
}

// FinalizerPrefix begins every rule's finalizer: FinalizerFor(rule).
const FinalizerPrefix = "cleanup.kubecel.dev/"

// FinalizerFor is the finalizer one rule puts on a parent before it creates a child that
// Kubernetes garbage collection cannot reach (cluster-scoped, or in another namespace).
// Each rule removes only its own, once it has deleted those children.
func FinalizerFor(rule string) string { return FinalizerPrefix + rule }

// Labels and annotations kubecel puts on every child (the child contract is in package
// rules; see rules.Rule.Shape).
const (
	LabelManagedBy   = rules.LabelManagedBy
	ManagedByValue   = rules.ManagedByValue
	LabelRule        = rules.LabelRule
	LabelParentUID   = rules.LabelParentUID
	LabelChild       = rules.LabelChild
	AnnotationParent = rules.AnnotationParent
	// AnnotationAppliedHash holds a hash of the child as kubecel last applied it
	// (without this annotation), written by that apply: see needsApply.
	AnnotationAppliedHash = rules.AnnotationAppliedHash
)

// Key identifies one parent under one rule: the unit of work of the queue.
type Key struct {
	Rule      string
	Namespace string
	Name      string
}

// keyFor is the queue key of parent under st's rule.
func keyFor(st *ruleState, parent *unstructured.Unstructured) Key {
	return Key{Rule: st.rule.Name, Namespace: parent.GetNamespace(), Name: parent.GetName()}
}

func (k Key) String() string {
	if k.Namespace == "" {
		return k.Rule + ":" + k.Name
	}
	return k.Rule + ":" + k.Namespace + "/" + k.Name
}

// parentKey maps a child to the key of its parent, from its labels and annotation.
func parentKey(obj *cachedObject) (Key, bool) {
	rule := obj.rule
	parts := strings.Split(obj.parent, "/")
	if rule == "" || len(parts) != 4 || parts[3] == "" {
		return Key{}, false
	}
	return Key{Rule: rule, Namespace: parts[2], Name: parts[3]}, true
}

// objectKey identifies one object: kind, namespace and name.
type objectKey struct {
	GK        schema.GroupKind
	Namespace string
	Name      string
}

func keyOf(obj named) objectKey {
	return objectKey{GK: obj.GetObjectKind().GroupVersionKind().GroupKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

func (k objectKey) String() string { return rules.ObjectName(k.GK, k.Namespace, k.Name) }
