package crdschema

import (
	"context"
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

var gadgets = &apiextensionsv1.CustomResourceDefinition{
	ObjectMeta: metav1.ObjectMeta{Name: "gadgets.crdschema.kubecel.dev"},
	Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "crdschema.kubecel.dev",
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
		Scope: apiextensionsv1.ClusterScoped,
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
			Name: "v1", Served: true, Storage: true,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}},
				},
			}},
		}},
	},
}

func TestMain(m *testing.M) {
	testenv.Main(m, controlplane.Options{CRDs: []*apiextensionsv1.CustomResourceDefinition{gadgets}})
}

func TestFromCluster(t *testing.T) {
	schemas, err := FromCluster(t.Context(), testenv.Config(t))
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "crdschema.kubecel.dev", Version: "v1", Resource: "gadgets"}
	s := schemas.ResourceSchema(gvr)
	if s == nil {
		t.Fatalf("no schema for %s", gvr)
	}
	if got := s.Properties["spec"].Properties["size"].Type; got != "integer" {
		t.Errorf("spec.size type = %q, want integer", got)
	}
	if k := schemas.KindSchema(gvr.GroupVersion().WithKind("Gadget")); k == nil {
		t.Error("no schema for kind Gadget")
	}
	scopes, ok := schemas.(rules.ScopeSource)
	if !ok {
		t.Fatalf("%T does not tell scopes", schemas)
	}
	if namespaced, known := scopes.ResourceNamespaced(gvr.GroupResource()); !known || namespaced {
		t.Errorf("gadgets namespaced = %v, known = %v; want cluster-scoped, known", namespaced, known)
	}
	if s := schemas.ResourceSchema(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}); s != nil {
		t.Error("a built-in kind has a CRD schema; want dynamically typed")
	}
}

// TestReaderKeepsTheSourceWhileNoCRDChanges: a Reader returns the very same source while
// the CRDs stay as they are (so that a rules reload takes over its compiled rules), and
// a new one that has the change as soon as a CRD changes.
func TestReaderKeepsTheSourceWhileNoCRDChanges(t *testing.T) {
	ctx := t.Context()
	cfg := testenv.Config(t)
	r, err := NewReader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	first, err := r.Schemas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.Schemas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Fatal("a second read with no CRD changed gave another source")
	}
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gizmos := gadgets.DeepCopy()
	gizmos.Name, gizmos.Spec.Names = "gizmos.crdschema.kubecel.dev", apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList"}
	if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, gizmos, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), gizmos.Name, metav1.DeleteOptions{})
	})
	changed, err := r.Schemas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "crdschema.kubecel.dev", Version: "v1", Resource: "gizmos"}
	if changed == first || changed.ResourceSchema(gvr) == nil {
		t.Errorf("after a CRD was created: the same source %v, schema of gizmos %v", changed == first, changed.ResourceSchema(gvr))
	}
	gadgetsGVR := gvr.GroupVersion().WithResource("gadgets")
	if a, b := first.ResourceSchema(gadgetsGVR), changed.ResourceSchema(gadgetsGVR); a == nil || a != b {
		t.Error("the schema of gadgets, whose CRD did not change, is another object in the new source: rules that name gadgets would be compiled again")
	}
	for name, crd := range r.crds {
		if crd.ManagedFields != nil || crd.Annotations != nil || len(crd.Status.Conditions) > 0 {
			t.Errorf("the reader keeps CRD %s with its managedFields (%d), annotations (%d) or status (%d conditions)",
				name, len(crd.ManagedFields), len(crd.Annotations), len(crd.Status.Conditions))
		}
	}
	// The API server writes the new CRD's status (names accepted, established) after
	// the create, each a change; once it is done, reads give one source again.
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		a, errA := r.Schemas(ctx)
		b, errB := r.Schemas(ctx)
		return errA == nil && errB == nil && a == b && a.ResourceSchema(gvr) != nil, fmt.Sprintf("two reads give the same source with gizmos: %v (errors %v, %v)", a == b, errA, errB)
	})
}
