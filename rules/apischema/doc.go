// Package apischema turns a rule's `api:` block into the CustomResourceDefinition of its
// parent resource, and judges an edit of that definition against the one in a cluster.
//
// The block is the compact form kro users know (SimpleSchema): each field of spec and
// status is a type with markers, `replicas: integer | default=1 minimum=1`, or a map of
// fields for a nested object. Parse reads it strictly and reports each problem with its
// path in the block (types.go, markers.go); Definition.CRD generates the CRD with the
// status subresource and the status fields every kubecel rule writes (observedGeneration
// and conditions, crd.go). What the API server would refuse in a CRD is refused here
// first, with the API server's own libraries: the schema is structural, its defaults
// validate, its CEL rules compile within their cost (check.go).
//
// Definition.Admit does to an object what the API server does before it stores it
// (prune unknown fields, apply defaults, validate), so that kubecel render and test see
// a parent as the controller would (admit.go). Compare lists the changes between the
// schema of a CRD in a cluster and a new one, each breaking change with a test of which
// stored objects it breaks (compare.go, affects.go).
//
// The package is pure: no client-go, no cluster.
package apischema
