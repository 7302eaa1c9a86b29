package dev

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
)

// TestMain shares one local control plane, started by the first test that needs it,
// between the package's integration tests (TestReportReady), with the gadgets CRD.
func TestMain(m *testing.M) {
	testenv.Main(m, controlplane.Options{CRDs: []*apiextensionsv1.CustomResourceDefinition{gadgetCRD()}})
}

// gadgets is the resource of gadgetCRD.
var gadgets = schema.GroupVersionResource{Group: "plan.kubecel.dev", Version: "v1", Resource: "gadgets"}

// gadgetCRD is a namespaced kind with a free-form spec and status, and a status
// subresource.
func gadgetCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	free := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.plan.kubecel.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "plan.kubecel.dev",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget", ListKind: "GadgetList", Singular: "gadget"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": free, "status": free},
				}},
			}},
		},
	}
}
