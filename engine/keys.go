package engine

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/rules"
)

// queueKey identifies one parent under one rule: the unit of work of the queue.
type queueKey struct {
	Rule      string
	Namespace string
	Name      string
}

// keyFor is the queue key of parent under st's rule.
func keyFor(st *ruleState, parent *unstructured.Unstructured) queueKey {
	return queueKey{Rule: st.rule.Name, Namespace: parent.GetNamespace(), Name: parent.GetName()}
}

func (k queueKey) String() string {
	if k.Namespace == "" {
		return k.Rule + ":" + k.Name
	}
	return k.Rule + ":" + k.Namespace + "/" + k.Name
}

// parentKey maps a child to the key of its parent, from its labels and annotation.
func parentKey(obj *informers.Object) (queueKey, bool) {
	rule := obj.Rule()
	parts := strings.Split(obj.Parent(), "/")
	if rule == "" || len(parts) != 4 || parts[3] == "" {
		return queueKey{}, false
	}
	return queueKey{Rule: rule, Namespace: parts[2], Name: parts[3]}, true
}

// named is what keyOf needs. Both *unstructured.Unstructured and *informers.Object are one.
type named interface {
	GetObjectKind() schema.ObjectKind
	GetNamespace() string
	GetName() string
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
