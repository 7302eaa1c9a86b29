package rules

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestLookupWithheld: the lookup of a ref named from Secret data is Withheld for
// display, and keeps its name for the caches.
func TestLookupWithheld(t *testing.T) {
	r := loadRule(t, namedRules, Options{})
	res, err := r.EvaluateWithRefs(t.Context(), namedParent(), Observed{}, secretObjects())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range res.Refs {
		if l.Ref == "app" && (!l.Withheld || l.Object() != "ConfigMap <withheld>/<withheld>" || l.Name != planted+"-app") {
			t.Errorf("lookup of app: Withheld %v, Object %q, Name %q: want withheld for display, the name kept for the caches", l.Withheld, l.Object(), l.Name)
		}
		if l.Ref == "creds" && (l.Withheld || l.Object() != "Secret team/creds") {
			t.Errorf("lookup of creds: Withheld %v, Object %q", l.Withheld, l.Object())
		}
	}
}

// TestShowObjectWithholdsSecretNames: whatever names an object of a child named from
// Secret data, ConfigMap or Secret, withholds the name: ShowObject (the controller's
// Events, logs and errors) and ShowManifest (render, plan, trace).
func TestShowObjectWithholdsSecretNames(t *testing.T) {
	r := loadRule(t, namedRules, Options{})
	var got []bool
	for _, ch := range r.Children {
		got = append(got, ch.SecretName)
	}
	// In dependency order: cm, copy, plain, waits.
	if diff := cmp.Diff([]bool{true, true, false, false}, got); diff != "" {
		t.Errorf("SecretName of cm, copy, plain, waits (-want +got):\n%s", diff)
	}
	cm := schema.GroupKind{Kind: "ConfigMap"}
	if got := r.ShowObject("cm", cm, "team", planted); got != "ConfigMap <withheld>/<withheld>" {
		t.Errorf("ShowObject(cm) = %q", got)
	}
	if got := r.ShowObject("copy", schema.GroupKind{Kind: "Secret"}, "team", "copy-"+planted); strings.Contains(got, planted) {
		t.Errorf("ShowObject(copy) = %q", got)
	}
	if got := r.ShowObject("plain", cm, "team", "creds-plain"); got != "ConfigMap team/creds-plain" {
		t.Errorf("ShowObject(plain) = %q", got)
	}
	// An object of a child the rule no longer has: the rule reads Secret data.
	if got := r.ShowObject("gone", cm, "team", planted); strings.Contains(got, planted) {
		t.Errorf("ShowObject(gone) = %q", got)
	}
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": planted, "namespace": "team"}}
	shown := r.ShowManifest("cm", obj)
	if diff := cmp.Diff(map[string]any{"name": Withheld, "namespace": Withheld}, shown["metadata"]); diff != "" {
		t.Errorf("ShowManifest(cm) metadata (-want +got):\n%s", diff)
	}
	if obj["metadata"].(map[string]any)["name"] != planted {
		t.Error("ShowManifest modified its input")
	}
}

// TestWhatNamesFromSecret: which expressions compute a name from Secret data.
func TestWhatNamesFromSecret(t *testing.T) {
	tests := []struct {
		name, parent, refs, forEach string
		want                        bool
	}{
		{name: `${refs.creds.data.token}`, want: true},
		{name: `${refs.creds.metadata.name}`},
		{name: `${refs.creds.?metadata.?name.orValue("x")}`},
		{name: `${refs.creds.metadata.labels.x}`, want: true},
		// The object as a whole: taken as reading its data.
		{name: `${dyn(refs.creds).metadata.name}`, want: true},
		{name: `${refs.plain.data.token}`},
		{name: `${parent.metadata.name}`},
		// A ref named from Secret data: its name is, its data is not.
		{name: `${refs.app.metadata.name}`, refs: "app", want: true},
		{name: `${refs.app.data.v}`, refs: "app"},
		// A Secret parent: its metadata is no secret, its data is.
		{name: `${parent.metadata.name}-copy`, parent: "secrets"},
		{name: `${parent.data.token}`, parent: "secrets", want: true},
		// each of a forEach over Secret data, or over objects.
		{name: `x-${each}`, forEach: `refs.creds.data.map(k, k)`, want: true},
		{name: `x-${index}`, forEach: `refs.creds.data.map(k, k)`},
		{name: `x-${each}`, forEach: `refs.plain.data.map(k, k)`},
	}
	for _, tt := range tests {
		t.Run(tt.name+" "+tt.parent+tt.forEach, func(t *testing.T) {
			parent := "{apiVersion: example.com/v1, resource: webapps}"
			if tt.parent != "" {
				parent = "{apiVersion: v1, resource: " + tt.parent + "}"
			}
			forEach := ""
			if tt.forEach != "" {
				forEach = "\n      forEach: '" + tt.forEach + "'"
			}
			rule := `- name: names
  parent: ` + parent + `
  refs:
    - {id: creds, apiVersion: v1, kind: Secret, name: creds}
    - {id: plain, apiVersion: v1, kind: ConfigMap, name: plain}
    - {id: app, apiVersion: v1, kind: ConfigMap, name: '${refs.creds.data.token}'}
  children:
    - id: c` + forEach + `
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: '` + tt.name + `'}
`
			r := loadRule(t, rule, Options{})
			if got := r.Children[0].SecretName; got != tt.want {
				t.Errorf("SecretName = %v, want %v", got, tt.want)
			}
		})
	}
}
