package crdschema

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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
