package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/rules/internal/builtin"
)

// TestEmbeddedSchemasAreCurrent generates the schemas from the local control plane and
// compares them with the file package rules embeds.
func TestEmbeddedSchemasAreCurrent(t *testing.T) {
	cp, err := controlplane.Start(t.Context(), controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	got, err := Generate(t.Context(), cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	embedded, err := os.ReadFile("../../builtin.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, embedded) {
		f, _ := builtin.Decode(got)
		old, _ := builtin.Decode(embedded)
		t.Errorf("rules/builtin.json.gz is not current (control plane %s, file %s, %d and %d kinds): run `make schemas`",
			f.KubernetesVersion, old.KubernetesVersion, len(f.Kinds), len(old.Kinds))
	}
}

func TestConvert(t *testing.T) {
	refs := map[string]bool{}
	got := convert(map[string]any{
		"type":        "object",
		"description": "dropped",
		"properties": map[string]any{
			"port":       map[string]any{"type": "integer", "format": "int32", "default": 0},
			"targetPort": map[string]any{"allOf": []any{map[string]any{"$ref": refPrefix + "io.k8s.apimachinery.pkg.util.intstr.IntOrString"}}},
			"limits": map[string]any{"type": "object", "additionalProperties": map[string]any{
				"$ref": refPrefix + "io.k8s.apimachinery.pkg.api.resource.Quantity"}},
			"args":   map[string]any{"type": "array", "items": map[string]any{"type": "string", "default": ""}},
			"either": map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}},
		},
	}, refs)
	props := got.Properties
	switch {
	case got.Type != "object" || got.Description != "" || len(props) != 5:
		t.Errorf("object: %+v", got)
	case props["port"].Type != "integer" || props["port"].Format != "" || props["port"].Default != nil:
		t.Errorf("port: %+v", props["port"])
	case props["targetPort"].Ref == nil || *props["targetPort"].Ref != "io.k8s.apimachinery.pkg.util.intstr.IntOrString":
		t.Errorf("targetPort: %+v", props["targetPort"])
	case props["limits"].AdditionalProperties == nil || props["limits"].AdditionalProperties.Schema.Ref == nil:
		t.Errorf("limits: %+v", props["limits"])
	case props["args"].Items == nil || props["args"].Items.Schema.Type != "string":
		t.Errorf("args: %+v", props["args"])
	case !props["either"].XIntOrString || props["either"].Type != "":
		t.Errorf("either: %+v", props["either"])
	}
	want := map[string]bool{"io.k8s.apimachinery.pkg.util.intstr.IntOrString": true, "io.k8s.apimachinery.pkg.api.resource.Quantity": true}
	if len(refs) != len(want) || !refs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] || !refs["io.k8s.apimachinery.pkg.api.resource.Quantity"] {
		t.Errorf("refs = %v, want %v", refs, want)
	}
}
