package apis

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"

	"github.com/kubecel/kubecel/rules"
)

// ruleWith loads a rule that defines Website with the given spec fields.
func ruleWith(t *testing.T, spec string) *rules.Rule {
	t.Helper()
	src := `apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: website
    api:
      group: sites.example.com
      version: v1
      kind: Website
      spec:
` + spec + `
    children:
      - id: config
        template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
`
	rs, err := rules.Load([]byte(src), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rs.Rules[0]
}

func identity(t *testing.T, name string) *rules.Identity {
	t.Helper()
	id, err := rules.NewIdentity(name, make([]byte, rules.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func unstructuredOf(t *testing.T, obj any) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func website(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sites.example.com/v1", "kind": "Website",
		"metadata": map[string]any{"name": name, "namespace": "ns"}, "spec": spec,
	}}
}

// TestJudge: what Judge decides for the CRD in the cluster, and the refusal it gives.
func TestJudge(t *testing.T) {
	ours := identity(t, "kubecel")
	v1 := ruleWith(t, "        image: string | required=true\n        replicas: integer | default=1")
	stored := []runtime.Object{
		website("a", map[string]any{"image": "x", "replicas": int64(1)}),
		website("b", map[string]any{"image": "y", "replicas": int64(3)}),
	}
	tests := []struct {
		name    string
		live    *apiextensionsv1.CustomResourceDefinition // nil: none
		next    *rules.Rule
		id      *rules.Identity
		action  Action
		foreign bool
		refusal []string // in Err's message
		stored  int
	}{
		{name: "missing", next: v1, id: ours, action: Create},
		{name: "ours, the same", live: Desired(ours, v1), next: v1, id: ours, action: Unchanged},
		{name: "ours, a field added", live: Desired(ours, v1), id: ours, action: Update,
			next: ruleWith(t, "        image: string | required=true\n        replicas: integer | default=1\n        tier: string")},
		{name: "ours, a field removed", live: Desired(ours, v1), id: ours, action: Refused, stored: 2,
			next:    ruleWith(t, "        image: string | required=true"),
			refusal: []string{"websites.sites.example.com", "spec.replicas: removed", "(breaks 2 stored objects)"}},
		{name: "ours, a bound tightened", live: Desired(ours, v1), id: ours, action: Refused, stored: 2,
			next:    ruleWith(t, "        image: string | required=true\n        replicas: integer | default=1 maximum=2"),
			refusal: []string{"spec.replicas", "(breaks 1 stored object)"}},
		{name: "another installation's, the same", live: Desired(identity(t, "other"), v1), next: v1, id: ours, action: Unchanged, foreign: true},
		{name: "another installation's, differs", live: Desired(identity(t, "other"), v1), id: ours, action: Refused, foreign: true,
			next:    ruleWith(t, "        image: string | required=true\n        replicas: integer | default=1\n        tier: string"),
			refusal: []string{"was not made by this kubecel installation", "spec.tier"}},
		{name: "no identity (check): whose is not judged", live: Desired(identity(t, "other"), v1), id: nil, action: Update,
			next: ruleWith(t, "        image: string | required=true\n        replicas: integer | default=1\n        tier: string")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := append([]runtime.Object(nil), stored...)
			if tt.live != nil {
				objs = append(objs, unstructuredOf(t, tt.live))
			}
			client := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
				CRDs: "CustomResourceDefinitionList", {Group: "sites.example.com", Version: "v1", Resource: "websites"}: "WebsiteList",
			}, objs...)
			j, err := (&Manager{Client: client, Identity: tt.id}).Judge(t.Context(), tt.next)
			if err != nil {
				t.Fatal(err)
			}
			if j.Action != tt.action || j.Foreign != tt.foreign || j.Stored != tt.stored {
				t.Errorf("action %s foreign %v stored %d, want %s %v %d (changes %v)", j.Action, j.Foreign, j.Stored, tt.action, tt.foreign, tt.stored, j.Changes)
			}
			err = j.Err()
			if (err != nil) != (len(tt.refusal) > 0) {
				t.Fatalf("Err() = %v", err)
			}
			for _, part := range tt.refusal {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("refusal %q lacks %q", err, part)
				}
			}
		})
	}
}
