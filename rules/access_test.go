package rules

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestAccess(t *testing.T) {
	webapps := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "webapps"}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	websites := schema.GroupVersionResource{Group: "sites.example.com", Version: "v1", Resource: "websites"}
	deploys := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	parentVerbs := []string{"get", "list", "watch", "patch"}
	childVerbs := []string{"get", "list", "watch", "create", "patch", "delete"}
	tests := []struct {
		name       string
		rule       string
		namespaced bool
		children   []schema.GroupVersionResource
		want       []Access
	}{
		{
			name: "status, namespaces, children once each",
			rule: `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps, namespaces: [a, b]}
  status: {fields: {x: "1"}}
`,
			namespaced: true,
			children:   []schema.GroupVersionResource{cms, deploys, cms},
			want: []Access{
				{Resource: webapps, Namespace: "a", Verbs: parentVerbs},
				{Resource: webapps, Subresource: "status", Namespace: "a", Verbs: []string{"patch"}},
				{Resource: webapps, Namespace: "b", Verbs: parentVerbs},
				{Resource: webapps, Subresource: "status", Namespace: "b", Verbs: []string{"patch"}},
				{Resource: cms, Verbs: childVerbs},
				{Resource: deploys, Verbs: childVerbs},
			},
		},
		{
			name: "cluster-scoped parent: namespaces do not apply",
			rule: `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps, namespaces: [a]}
  children:
    - id: cm
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: other}}
`,
			children: []schema.GroupVersionResource{cms},
			want: []Access{
				{Resource: webapps, Verbs: parentVerbs},
				{Resource: cms, Verbs: childVerbs},
			},
		},
		{
			name: "an api: its CRD, and its parents listed everywhere",
			rule: `- name: site
  api:
    group: sites.example.com
    version: v1
    kind: Website
    spec: {image: string}
  parent: {namespaces: [a]}
  children:
    - id: cm
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
`,
			namespaced: true,
			want: []Access{
				{Resource: websites, Namespace: "a", Verbs: parentVerbs},
				{Resource: schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, Verbs: []string{"get", "create", "patch"}},
				{Resource: websites, Verbs: []string{"list"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := loadRule(t, tt.rule, Options{})
			if diff := cmp.Diff(tt.want, r.Access(tt.namespaced, tt.children)); diff != "" {
				t.Errorf("Access (-want +got):\n%s", diff)
			}
		})
	}
}
