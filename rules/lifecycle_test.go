package rules

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestLifecycle(t *testing.T) {
	tests := []struct {
		name         string
		lifecycle    string // the child's lifecycle block, one line of flow YAML
		wantRemove   bool
		wantParent   bool
		wantPolicy   string
		wantLoadFail string
	}{
		{name: "default", wantPolicy: ""},
		{name: "explicit delete", lifecycle: "{onRemove: Delete, onParentDelete: Delete}", wantPolicy: ""},
		{name: "keep on remove", lifecycle: "{onRemove: Keep}", wantRemove: true,
			wantPolicy: "kept (released) when no longer produced; deleted with the parent"},
		{name: "keep on parent delete", lifecycle: "{onParentDelete: Keep}", wantParent: true,
			wantPolicy: "kept (released) when the parent is deleted; deleted when no longer produced"},
		{name: "keep both", lifecycle: "{onRemove: Keep, onParentDelete: Keep}", wantRemove: true, wantParent: true,
			wantPolicy: "kept (released) when no longer produced and when the parent is deleted"},
		{name: "bad value", lifecycle: "{onRemove: Orphan}",
			wantLoadFail: `line 8: rule "web" child "data": lifecycle.onRemove: must be Delete or Keep, not "Orphan"`},
		{name: "lower case", lifecycle: "{onParentDelete: keep}",
			wantLoadFail: `line 8: rule "web" child "data": lifecycle.onParentDelete: must be Delete or Keep, not "keep"`},
		{name: "unknown key", lifecycle: "{onDelete: Keep}", wantLoadFail: "lifecycle.onDelete"},
		{name: "not a map", lifecycle: "Keep", wantLoadFail: `child "data": lifecycle: must be a map, not a string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			block := ""
			if tt.lifecycle != "" {
				block = "      lifecycle: " + tt.lifecycle + "\n"
			}
			src := `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
    - id: data
` + block + `      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
`
			rs, err := Load(ruleFile(src), Options{})
			if tt.wantLoadFail != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantLoadFail) {
					t.Fatalf("Load error %v; want one containing %q", err, tt.wantLoadFail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ch := rs.Rules[0].Children[0]
			if ch.KeepOnRemove != tt.wantRemove || ch.KeepOnParentDelete != tt.wantParent || ch.Policy() != tt.wantPolicy {
				t.Errorf("KeepOnRemove %v, KeepOnParentDelete %v, Policy %q; want %v, %v, %q",
					ch.KeepOnRemove, ch.KeepOnParentDelete, ch.Policy(), tt.wantRemove, tt.wantParent, tt.wantPolicy)
			}
		})
	}
}

// TestGarbageCollected: a child kept when its parent is deleted gets no owner reference,
// like a child in another namespace, so that garbage collection never deletes it.
func TestGarbageCollected(t *testing.T) {
	r := loadRule(t, `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
    - id: plain
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
    - id: kept
      lifecycle: {onParentDelete: Keep}
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}
    - id: pruneKept
      lifecycle: {onRemove: Keep}
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}
    - id: far
      crossNamespace: true
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: d, namespace: other}}
`, Options{})
	parent := ParentRef{APIVersion: "example.com/v1", Kind: "WebApp", Resource: schema.GroupResource{Group: "example.com", Resource: "webapps"},
		Namespace: "team", Name: "shop", UID: "u-1", Namespaced: true}
	tests := []struct {
		id, namespace string
		want          bool
	}{
		{id: "plain", namespace: "team", want: true},
		{id: "kept", namespace: "team", want: false},
		{id: "pruneKept", namespace: "team", want: true},
		{id: "far", namespace: "other", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			if got := r.GarbageCollected(parent, tt.id, tt.namespace, true); got != tt.want {
				t.Errorf("GarbageCollected = %v, want %v", got, tt.want)
			}
			obj, err := shapeOne(r, nil, parent, Desired{ID: tt.id, Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": tt.namespace},
			}}, true)
			if err != nil {
				t.Fatal(err)
			}
			_, owned := obj["metadata"].(map[string]any)["ownerReferences"]
			if owned != tt.want {
				t.Errorf("Shape gives an owner reference: %v, want %v", owned, tt.want)
			}
		})
	}
}
