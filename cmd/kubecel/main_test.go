package main

import (
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
)

// TestMain shares one local control plane between the package's integration tests
// (plan, run --dry-run, the scripts in testdata/script/cluster); the offline tests
// (render, check, rbac) do not use it. Writes are audited so that tests can prove a
// command wrote nothing. testscript.Main makes this test binary the kubecel command of
// the scripts (see script_test.go): run under that name, it runs main and exits before
// any control plane starts.
//
// The tests run the root command many times in one process, and each run applies the
// logging flags to klog, which a process does once: applying the same (default) setup
// again is a no-op. Tests of other logging flags run the built binary.
func TestMain(m *testing.M) {
	testscript.Main(withControlPlane{m}, map[string]func(){"kubecel": main})
}

// withControlPlane runs the package's tests with the shared control plane.
type withControlPlane struct{ m *testing.M }

func (w withControlPlane) Run() int {
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	return testenv.Run(w.m, controlplane.Options{AuditWrites: true, CRDs: []*apiextensionsv1.CustomResourceDefinition{
		testCRD("gadgets", "Gadget", apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTo(true)}),
		// Only the rollout scripts have rollers: status counts every one in the cluster.
		testCRD("rollers", "Roller", apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTo(true)}),
		testCRD("parts", "Part", apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"size": {Type: "integer"},
		}}),
	}})
}

// testCRD is a namespaced plan.kubecel.dev/v1 kind with the given spec schema, a
// free-form status and a status subresource.
func testCRD(plural, kind string, spec apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".plan.kubecel.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "plan.kubecel.dev",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List", Singular: plural[:len(plural)-1]},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec":   spec,
						"status": {Type: "object", XPreserveUnknownFields: ptrTo(true)},
					},
				}},
			}},
		},
	}
}
