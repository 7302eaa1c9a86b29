// Package kustomized renders a kustomization of deploy/ for its tests, as
// `kubectl kustomize DIR` does.
package kustomized

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Render builds the kustomization in dir and returns its objects; a failure ends the test.
func Render(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resources.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &obj.Object); err != nil {
			t.Fatalf("decode %s: %v", r.CurId(), err)
		}
		objs = append(objs, obj)
	}
	return objs
}
