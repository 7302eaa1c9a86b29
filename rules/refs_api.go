package rules

// This file is the contract of references (a rule's `refs:`): objects a rule reads
// besides its parent and its children. The engine looks them up in its caches, plan
// reads them live, render from files; all of them through RefSource.

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Ref is the static description of one reference of a rule.
type Ref struct {
	ID string
	// GVK is the literal apiVersion and kind of the referenced objects.
	GVK schema.GroupVersionKind
	// Selector is true for the selector form: refs.<id> is a list of objects. In the
	// name form refs.<id> is one object.
	Selector bool
	// Optional lets CEL see a missing object as absent instead of making the parent
	// wait. A selector ref is never missing: it reads an empty list.
	Optional bool
	// CrossNamespace allows a namespaced parent's ref to read another namespace or a
	// cluster-scoped kind.
	CrossNamespace bool
	// Namespace is the literal namespace of the ref; empty when the ref sets none (the
	// parent's) or computes it with ${}.
	Namespace string
	// DependsOn lists the ids of the refs whose values this ref's name, namespace or
	// selector read.
	DependsOn []string
	// Sensitive is true for a Secret, or a ref marked `sensitive: true`: no message ever
	// quotes a value read from it (sensitive.go).
	Sensitive bool
	// SecretName is true when the ref computes its name, namespace or selector from
	// Secret data (secretnames.go): its Lookups are Withheld.
	SecretName bool

	// compiled holds the parts the evaluation needs; see refs.go.
	compiled *refProgram
}

// RefSource looks referenced objects up. The engine's is its informer caches, plan's
// the API server, render's the objects of its input files (Objects). An error is a
// failed lookup (a cache not synced, a 403), never "not found".
type RefSource interface {
	// Get returns the object of kind gvk named name in namespace ("" for a
	// cluster-scoped kind); found is false when there is none.
	Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (obj map[string]any, found bool, err error)
	// List returns the objects of kind gvk in namespace ("" for every namespace, or a
	// cluster-scoped kind) whose labels match selector.
	List(ctx context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]map[string]any, error)
}

// Lookup is one reference read during an evaluation: what the engine indexes to find
// the parents an event concerns, and what render and plan report.
type Lookup struct {
	// Ref is the ref id.
	Ref string
	GVK schema.GroupVersionKind
	// Namespace is the namespace looked in ("" for a cluster-scoped kind, or every
	// namespace in the selector form).
	Namespace string
	// Name is set in the name form.
	Name string
	// Selector is set in the selector form.
	Selector labels.Selector
	// Found is the number of objects found: 0 or 1 in the name form.
	Found int
	// Withheld is true when the ref computes its name, namespace or selector from
	// Secret data: whatever shows the lookup shows Object and ShownSelector, never
	// Namespace, Name or Selector.
	Withheld bool
}
