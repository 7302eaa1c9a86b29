package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestRestrictedManifests: --restricted can create every object of deploy/base's
// manifests it reads, and binds to the ServiceAccount each role that kubecel-controller
// aggregates (the bench's control plane aggregates none).
func TestRestrictedManifests(t *testing.T) {
	var bound []string
	for _, path := range restrictedManifests {
		data, err := os.ReadFile(filepath.Join("..", "..", path))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range splitYAML(data) {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if _, ok := restrictedResources[obj.GetKind()]; !ok {
				t.Errorf("%s: %s %s: the bench knows no resource for kind %s", path, obj.GetKind(), obj.GetName(), obj.GetKind())
			}
			if obj.GetKind() == "ClusterRole" && obj.GetLabels()["kubecel.dev/aggregate-to-controller"] == "true" {
				bound = append(bound, obj.GetName())
			}
		}
	}
	if diff := cmp.Diff([]string{"kubecel-base"}, bound); diff != "" {
		t.Errorf("roles deploy/base aggregates into kubecel-controller (-want +got):\n%s", diff)
	}
	b := bindToServiceAccount("kubecel-rules")
	if got, want := b.GetKind(), "ClusterRoleBinding"; got != want || restrictedResources[got].Resource != "clusterrolebindings" {
		t.Errorf("binding kind %q, want %q", got, want)
	}
}
