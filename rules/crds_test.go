package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestSchemasFromCRDDir(t *testing.T) {
	s := testSchemas(t)
	webapps := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "webapps"}
	webApp := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "WebApp"}
	if s.ResourceSchema(webapps) == nil || s.KindSchema(webApp) == nil {
		t.Fatal("no schema for webapps / WebApp")
	}
	if got, ok := s.ResourceFor(webApp); !ok || got != webapps {
		t.Errorf("ResourceFor(WebApp) = %v, %v", got, ok)
	}
	if s.ResourceSchema(webapps.GroupVersion().WithResource("other")) != nil {
		t.Error("schema for an unknown resource")
	}
	if _, ok := s.ResourceFor(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}); ok {
		t.Error("ResourceFor(Pod) found a CRD")
	}
}

func TestSchemasFromCRDDirErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{name: "no CRD", files: map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\n", "notes.txt": "x"}, want: "no CustomResourceDefinition"},
		{name: "broken YAML", files: map[string]string{"bad.yaml": "apiVersion: [\n"}, want: "bad.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := SchemasFromCRDDir(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("SchemasFromCRDDir() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if _, err := SchemasFromCRDDir(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("SchemasFromCRDDir() of a missing directory succeeded")
	}
}
