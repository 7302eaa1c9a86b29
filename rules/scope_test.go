package rules

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// scopeCRD is a CRD without a schema, of the given scope.
func scopeCRD(group, kind, plural string, scope apiextensionsv1.ResourceScope) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group:    group,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, Plural: plural},
			Scope:    scope,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}},
		},
	}
}

// scopeRule is a rule on the parent resource with one child of the given kind.
func scopeRule(apiVersion, resource, child string) []byte {
	return ruleFile(`- name: t
  parent: {apiVersion: ` + apiVersion + `, resource: ` + resource + `}
  children:
  - id: ns
` + child)
}

const namespaceChild = `    template:
      apiVersion: v1
      kind: Namespace
      metadata: {name: "${parent.metadata.name}"}
`

func TestScopeCheck(t *testing.T) {
	crds := SchemasFromCRDs(
		scopeCRD("example.com", "WebApp", "webapps", apiextensionsv1.NamespaceScoped),
		scopeCRD("example.com", "ClusterWidget", "clusterwidgets", apiextensionsv1.ClusterScoped),
		scopeCRD("example.com", "Vague", "vagues", ""),
	)
	fix := func(kind, parent string) string {
		return kind + " is cluster-scoped and the parent " + parent + " is namespaced: add crossNamespace: true to the child if whoever writes a parent may create it"
	}
	tests := []struct {
		name    string
		data    []byte
		schemas SchemaSource
		want    []errView
	}{
		{
			name: "built-in parent, built-in child",
			data: scopeRule("apps/v1", "statefulsets", namespaceChild),
			want: []errView{{Line: 10, Rule: "t", Child: "ns", Message: fix("Namespace", "statefulsets.apps")}},
		},
		{
			name:    "a CRD parent whose scope the schemas know",
			data:    scopeRule("example.com/v1", "webapps", namespaceChild),
			schemas: crds,
			want:    []errView{{Line: 10, Rule: "t", Child: "ns", Message: fix("Namespace", "webapps.example.com")}},
		},
		{
			name:    "a cluster-scoped CRD child",
			data:    scopeRule("v1", "configmaps", "    template: {apiVersion: example.com/v1, kind: ClusterWidget, metadata: {name: x}}\n"),
			schemas: crds,
			want:    []errView{{Line: 8, Rule: "t", Child: "ns", Message: fix("ClusterWidget", "configmaps")}},
		},
		{
			name: "an expr child",
			data: scopeRule("v1", "secrets", `    expr: |
      {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
       "metadata": {"name": parent.metadata.name}}
`),
			want: []errView{{Line: 8, Rule: "t", Child: "ns", Message: fix("ClusterRole", "secrets")}},
		},
		{name: "crossNamespace allows it", data: scopeRule("apps/v1", "statefulsets", "    crossNamespace: true\n"+namespaceChild)},
		{name: "a cluster-scoped parent", data: scopeRule("v1", "namespaces", "    template: {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: x}}\n")},
		{name: "a namespaced child", data: scopeRule("apps/v1", "statefulsets", "    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n")},
		{name: "a parent of unknown scope", data: scopeRule("example.com/v1", "webapps", namespaceChild)},
		{name: "a CRD that states no scope", data: scopeRule("example.com/v1", "vagues", namespaceChild), schemas: crds},
		{
			name:    "a child of unknown scope",
			data:    scopeRule("apps/v1", "deployments", "    template: {apiVersion: other.example.com/v1, kind: Thing, metadata: {name: x}}\n"),
			schemas: crds,
		},
		{
			name:    "schemas that know no scopes",
			data:    scopeRule("example.com/v1", "webapps", namespaceChild),
			schemas: schemasOnly{crds},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.data, Options{Schemas: tt.schemas})
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Load(): %v", err)
				}
				return
			}
			if diff := cmp.Diff(tt.want, viewErrors(t, err, tt.want)); diff != "" {
				t.Errorf("Load() errors (-want +got):\n%s", diff)
			}
		})
	}
}

// schemasOnly hides the ScopeSource of a SchemaSource.
type schemasOnly struct{ SchemaSource }

func TestCRDSchemasScopes(t *testing.T) {
	s := testSchemas(t)
	type scope struct{ Namespaced, Known bool }
	got := map[string]scope{}
	for _, gk := range []schema.GroupKind{{Group: "example.com", Kind: "WebApp"}, {Group: "example.com", Kind: "Other"}} {
		n, k := s.Namespaced(gk)
		got[gk.String()] = scope{n, k}
	}
	for _, gr := range []schema.GroupResource{{Group: "example.com", Resource: "webapps"}, {Resource: "pods"}} {
		n, k := s.ResourceNamespaced(gr)
		got[gr.String()] = scope{n, k}
	}
	want := map[string]scope{
		"WebApp.example.com":  {true, true},
		"Other.example.com":   {false, false},
		"webapps.example.com": {true, true},
		"pods":                {false, false}, // built-in kinds are the rules package's own table
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scopes (-want +got):\n%s", diff)
	}
}

func TestBuiltinKindsAreConsistent(t *testing.T) {
	kinds := map[schema.GroupKind]bool{}
	for _, k := range builtinKinds {
		gk := schema.GroupKind{Group: k.group, Kind: k.kind}
		if kinds[gk] {
			t.Errorf("%s is listed twice", gk)
		}
		kinds[gk] = true
		if !kindPattern.MatchString(k.kind) || !resourcePattern.MatchString(k.resource) {
			t.Errorf("%s: invalid kind or resource %q", gk, k.resource)
		}
	}
}
