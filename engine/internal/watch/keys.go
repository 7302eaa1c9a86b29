package watch

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// Key identifies one parent under one rule: the unit of work of the queue.
type Key struct {
	Rule      string
	Namespace string
	Name      string
}

// KeyFor is the key of parent under rule.
func KeyFor(rule string, parent Named) Key {
	return Key{Rule: rule, Namespace: parent.GetNamespace(), Name: parent.GetName()}
}

func (k Key) String() string {
	if k.Namespace == "" {
		return k.Rule + ":" + k.Name
	}
	return k.Rule + ":" + k.Namespace + "/" + k.Name
}

// Bucket is the sharding bucket of the key's parent (contract.Bucket).
func (k Key) Bucket() int { return contract.Bucket(k.Namespace, k.Name) }

// parentOf maps a proven child to the key of its parent, from its labels and annotation.
func parentOf(obj *informers.Object) (Key, bool) {
	rule := obj.Rule()
	parts := strings.Split(obj.Parent(), "/")
	if rule == "" || len(parts) != 4 || parts[3] == "" {
		return Key{}, false
	}
	return Key{Rule: rule, Namespace: parts[2], Name: parts[3]}, true
}

// Named is what KeyOf needs. Both *unstructured.Unstructured and *informers.Object are one.
type Named interface {
	GetObjectKind() schema.ObjectKind
	GetNamespace() string
	GetName() string
}

// ObjectKey identifies one object: kind, namespace and name.
type ObjectKey struct {
	GK        schema.GroupKind
	Namespace string
	Name      string
}

// KeyOf is obj's ObjectKey.
func KeyOf(obj Named) ObjectKey {
	return ObjectKey{GK: obj.GetObjectKind().GroupVersionKind().GroupKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

func (k ObjectKey) String() string { return rules.ObjectName(k.GK, k.Namespace, k.Name) }

// storeKey is the key of an object in an informer's store.
func storeKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
