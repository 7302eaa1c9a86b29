package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// The shapes of the noisy neighbour's heavy work (--noisy-shape): the same 16,000
// children, made by a tenant who keeps its parents together, or spreads them over many
// namespaces, or over many cluster-scoped parents. A fair queue that gives a flow to each
// namespace, or to each cluster-scoped parent, gives the spread tenant more of the
// workers; the light tenant's times show whether it does.

// tenantLabel names the tenant that owns a namespace: the heavy tenant's namespaces say
// "heavy", the light tenant's "light" (for `kubecel run --fairness-key`).
const tenantLabel = "bench.kubecel.dev/tenant"

// clusterWebapps are the cluster-scoped parents of the cluster shape (testdata/crd-cluster.yaml).
var clusterWebapps = schema.GroupVersionResource{Group: "bench.kubecel.dev", Version: "v1", Resource: "clusterwebapps"}

// noisyShape is how the heavy tenant's work is laid out.
type noisyShape struct {
	// name is the value of --noisy-shape; label says it in the table.
	name, label string
	// parents of children ConfigMaps each.
	parents, children int
	// namespaces are the heavy tenant's namespaces, parent i in namespaces[i%len]; the
	// cluster shape's parents are cluster-scoped, their children in namespaces[0].
	namespaces []string
	cluster    bool
}

// defaultShape is the shape of the noisy-neighbour table's rows.
const defaultShape = "one-namespace"

// noisyShapes are the shapes --noisy-shape names.
var noisyShapes = []noisyShape{
	{name: defaultShape, label: "16 parents x 1,000 children, one namespace", parents: heavyParents, children: heavyChildren, namespaces: []string{heavyNS}},
	{name: "namespaces", label: "50 namespaces, 1 parent x 320 children each", parents: 50, children: 320, namespaces: spreadNamespaces(50)},
	{name: "cluster", label: "1,000 cluster-scoped parents x 16 children", parents: 1000, children: 16, namespaces: []string{heavyNS}, cluster: true},
}

// shapeNamed returns the shape of that name.
func shapeNamed(name string) (noisyShape, error) {
	for _, s := range noisyShapes {
		if s.name == name {
			return s, nil
		}
	}
	names := make([]string, len(noisyShapes))
	for i, s := range noisyShapes {
		names[i] = s.name
	}
	return noisyShape{}, fmt.Errorf("--noisy-shape %q: want one of %s", name, strings.Join(names, ", "))
}

// spreadNamespaces are n namespaces of the heavy tenant.
func spreadNamespaces(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", heavyNS, i)
	}
	return out
}

// total is the number of the heavy tenant's children.
func (s noisyShape) total() int { return s.parents * s.children }

// rule is the heavy tenant's rule, appended to the bench's rules.
func (s noisyShape) rule() string {
	if s.cluster {
		return fmt.Sprintf(`
  - name: heavy
    parent:
      apiVersion: bench.kubecel.dev/v1
      resource: clusterwebapps
    children:
      - id: part
        forEach: lists.range(%d)
        crossNamespace: true
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-${string(each)}", namespace: %s}
          data: {image: "${parent.spec.image}"}
`, s.children, s.namespaces[0])
	}
	return fmt.Sprintf(`
  - name: heavy
    parent:
      apiVersion: bench.kubecel.dev/v1
      resource: webapps
      namespaces: [%s]
    children:
      - id: part
        forEach: lists.range(%d)
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-${string(each)}"}
          data: {image: "${parent.spec.image}"}
`, strings.Join(s.namespaces, ", "), s.children)
}

// tenants maps every namespace the phase creates to its tenant (tenantLabel).
func (s noisyShape) tenants() map[string]string {
	out := map[string]string{lightNS: "light"}
	for _, ns := range s.namespaces {
		out[ns] = "heavy"
	}
	return out
}

// resource is where the heavy parents are.
func (s noisyShape) resource(c dynamic.Interface, i int) (dynamic.ResourceInterface, string) {
	if s.cluster {
		return c.Resource(clusterWebapps), ""
	}
	ns := s.namespaces[i%len(s.namespaces)]
	return c.Resource(webapps).Namespace(ns), ns
}

// create creates heavy parent i.
func (s noisyShape) create(ctx context.Context, c dynamic.Interface, i int) error {
	r, ns := s.resource(c, i)
	p := newParent(ns, i)
	if s.cluster {
		p.SetKind("ClusterWebApp")
		unstructured.RemoveNestedField(p.Object, "metadata", "namespace")
	}
	_, err := r.Create(ctx, p, metav1.CreateOptions{})
	return err
}

// remove deletes heavy parent i.
func (s noisyShape) remove(ctx context.Context, c dynamic.Interface, i int) error {
	r, _ := s.resource(c, i)
	return r.Delete(ctx, parentName(i), metav1.DeleteOptions{})
}

// ownNamespaces are the namespaces the phase creates: the light tenant's and the heavy
// one's, sorted.
func (s noisyShape) ownNamespaces() []string {
	out := append([]string{lightNS}, s.namespaces...)
	slices.Sort(out)
	return out
}
