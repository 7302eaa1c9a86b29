package rules

import (
	"github.com/kubecel/kubecel/rules/internal/format"
)

// This file is about a child's lifecycle (package parse reads the block): what happens
// to its objects when the rule stops producing them and when their parent is deleted.
//
//	lifecycle:
//	  onRemove: Keep        # default Delete
//	  onParentDelete: Keep  # default Delete
//
// Keep releases the object instead of deleting it: the controller removes its owner
// reference to the parent and kubecel's labels and annotations, and marks it with
// LabelReleased and AnnotationReleasedFrom. The object then belongs to nobody: nothing
// of kubecel touches it again, and a parent that later computes the same name finds it
// taken (ChildExists) unless the child says adopt: true.

// Lifecycle policies.
const (
	PolicyDelete = format.PolicyDelete
	PolicyKeep   = format.PolicyKeep
)

// Policy describes the child's lifecycle for people: "" for the default (deleted when no
// longer produced and with the parent).
func (c *Child) Policy() string {
	switch {
	case c.KeepOnRemove && c.KeepOnParentDelete:
		return "kept (released) when no longer produced and when the parent is deleted"
	case c.KeepOnRemove:
		return "kept (released) when no longer produced; deleted with the parent"
	case c.KeepOnParentDelete:
		return "kept (released) when the parent is deleted; deleted when no longer produced"
	}
	return ""
}

// GarbageCollected reports whether Shape gives the rule's child childID, in namespace
// (empty: cluster-scoped) of parent p, an owner reference, so that Kubernetes garbage
// collection deletes it with the parent. It does not for a child in another namespace or
// cluster-scoped under a namespaced parent (owner references cannot cross namespaces),
// nor for a child kept when the parent is deleted. The controller puts the rule's
// finalizer on the parent of any child it does not garbage-collect, and deletes or
// releases those children itself.
func (r *Rule) GarbageCollected(p ParentRef, childID, namespace string, childNamespaced bool) bool {
	if p.crossesNamespace(namespace, childNamespaced) {
		return false
	}
	ch := r.child(childID)
	return ch == nil || !ch.KeepOnParentDelete
}
