package rules

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// namedRules: the ref app and the children cm (a ConfigMap) and copy (a Secret) are named
// from the Secret ref creds' data; the ref peer and the child plain by its metadata.name,
// which is no secret. The ref app is missing, so what reads it waits.
const namedRules = `- name: named
  parent: {apiVersion: example.com/v1, resource: webapps}
  refs:
    - {id: creds, apiVersion: v1, kind: Secret, name: creds}
    - {id: app, apiVersion: v1, kind: ConfigMap, name: '${refs.creds.data.token}-app'}
    - {id: peer, apiVersion: v1, kind: ConfigMap, name: '${refs.creds.metadata.name}-peer', optional: true}
  children:
    - id: cm
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: '${refs.creds.data.token}'}
    - id: copy
      template:
        apiVersion: v1
        kind: Secret
        metadata: {name: 'copy-${refs.creds.data.token}'}
    - id: plain
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: '${refs.creds.metadata.name}-plain'}
    - id: waits
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: waits}
        data: {v: '${refs.app.data.v}'}
`

func namedParent() map[string]any {
	p := webApp(map[string]any{})
	p["metadata"].(map[string]any)["namespace"] = "team"
	return p
}

// TestRefNamedFromSecretIsWithheld: a missing ref whose name is computed from Secret
// data is described (render, plan, and the controller's RefMissing condition, which
// names the lookup's Object) without the value.
func TestRefNamedFromSecretIsWithheld(t *testing.T) {
	r := loadRule(t, namedRules, Options{})
	res, err := r.EvaluateWithRefs(t.Context(), namedParent(), Observed{}, secretObjects())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"app"}, res.MissingRefs); diff != "" {
		t.Fatalf("MissingRefs (-want +got):\n%s", diff)
	}
	want := []string{
		"refs.creds: Secret team/creds (found)",
		"refs.app: ConfigMap <withheld>/<withheld> (missing: what reads it waits)",
		"refs.peer: ConfigMap team/creds-peer (absent; optional)",
	}
	if diff := cmp.Diff(want, res.DescribeRefs()); diff != "" {
		t.Errorf("DescribeRefs() (-want +got):\n%s", diff)
	}
}

// TestNamesFromSecretWarn: check warns about every name computed from Secret data:
// refs' and children's, a Secret child's too, once each; not about a name read from a
// Secret's metadata.
func TestNamesFromSecretWarn(t *testing.T) {
	rs, err := Load(ruleFile(namedRules), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range rs.Warnings {
		if strings.Contains(w.Message, "Secret data") {
			got = append(got, w.Ref+w.Child+" "+w.Field)
		}
	}
	slices.Sort(got)
	want := []string{"app name", "cm template.metadata.name", "copy template.metadata.name"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings about Secret data (-want +got):\n%s\nall: %v", diff, rs.Warnings)
	}
}

// TestShapeErrorWithholdsSecretName: Shape refuses a child named from Secret data in
// another namespace; its error names the object withheld.
func TestShapeErrorWithholdsSecretName(t *testing.T) {
	r := loadRule(t, namedRules, Options{})
	res, err := r.EvaluateWithRefs(t.Context(), namedParent(), Observed{}, secretObjects())
	if err != nil {
		t.Fatal(err)
	}
	var desired []Desired
	for _, d := range res.Children {
		d.Object["metadata"].(map[string]any)["namespace"] = "elsewhere"
		desired = append(desired, d)
	}
	_, err = r.Shape(nil, ParentRef{APIVersion: "example.com/v1", Kind: "WebApp", Namespace: "team", Name: "shop", UID: "u-1", Namespaced: true},
		func(string, string) (bool, error) { return true, nil }, desired...)
	if err == nil || strings.Contains(err.Error(), planted) || !strings.Contains(err.Error(), `rule "named" child "cm": ConfigMap <withheld>/<withheld>:`) {
		t.Errorf("Shape() error = %v; want the ConfigMap named withheld", err)
	}
	var ce *ChildError
	if !errors.As(err, &ce) {
		t.Errorf("Shape() error %T holds no ChildError", err)
	}
}
