package rbac

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules"
)

func policyRule(group string, resources []string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: verbs}
}

func TestPolicyRules(t *testing.T) {
	// A cluster that serves Octopus as "octopodes" (a guess would say "octopus") and
	// Ingress, but not the example.com kinds.
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.AddSpecific(schema.GroupVersionKind{Group: "zoo.example.com", Version: "v1", Kind: "Octopus"},
		schema.GroupVersionResource{Group: "zoo.example.com", Version: "v1", Resource: "octopodes"},
		schema.GroupVersionResource{Group: "zoo.example.com", Version: "v1", Resource: "octopus"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}, meta.RESTScopeNamespace)
	// CRD manifests (--crds) that name the plural of Goose "geese".
	crds := rules.SchemasFromCRDs(&apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "geese.zoo.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "zoo.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Goose", Plural: "geese", Singular: "goose", ListKind: "GooseList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTo(true)}},
			}},
		},
	})

	tests := []struct {
		name        string
		rules       string
		crds        *rules.CRDSchemas
		mapper      meta.RESTMapper
		want        []rbacv1.PolicyRule
		wantGuessed []string
	}{
		{
			name:  "parent with status and built-in children, guessed",
			rules: webappRule,
			want: []rbacv1.PolicyRule{
				policyRule("", []string{"configmaps", "services"}, childAccess...),
				policyRule("apps", []string{"deployments"}, childAccess...),
				policyRule("example.com", []string{"webapps"}, parentAccess...),
				policyRule("example.com", []string{"webapps/status"}, "patch"),
			},
			wantGuessed: []string{"Deployment.apps/v1", "Service/v1", "ConfigMap/v1"},
		},
		{
			name: "no status block, no status access",
			rules: `- name: sts
  parent: {apiVersion: apps/v1, resource: statefulsets}
  children:
  - id: pdb
    template: {apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: x}}
`,
			want: []rbacv1.PolicyRule{
				policyRule("apps", []string{"statefulsets"}, parentAccess...),
				policyRule("policy", []string{"poddisruptionbudgets"}, childAccess...),
			},
			wantGuessed: []string{"PodDisruptionBudget.policy/v1"},
		},
		{
			name: "verbs merge per resource across rules; cross-namespace children need nothing more",
			rules: webappRule + `- name: config-copies
  parent: {apiVersion: v1, resource: configmaps, selector: {matchLabels: {copy: "yes"}}}
  children:
  - id: copy
    crossNamespace: true
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: other}}
  - id: svc
    template: {apiVersion: v1, kind: Service, metadata: {name: x}}
  status:
    fields: {copied: "${true}"}
`,
			want: []rbacv1.PolicyRule{
				policyRule("", []string{"configmaps", "services"}, childAccess...),
				policyRule("", []string{"configmaps/status"}, "patch"),
				policyRule("apps", []string{"deployments"}, childAccess...),
				policyRule("example.com", []string{"webapps"}, parentAccess...),
				policyRule("example.com", []string{"webapps/status"}, "patch"),
			},
			wantGuessed: []string{"Deployment.apps/v1", "Service/v1", "ConfigMap/v1"},
		},
		{
			name: "kinds mapped by CRDs, then by the cluster, then guessed",
			rules: `- name: zoo
  parent: {apiVersion: zoo.example.com/v1, resource: geese}
  children:
  - id: octopus
    template: {apiVersion: zoo.example.com/v1, kind: Octopus, metadata: {name: x}}
  - id: goose
    template: {apiVersion: zoo.example.com/v1, kind: Goose, metadata: {name: x}}
  - id: ingress
    template: {apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: x}}
  - id: endpoints
    template: {apiVersion: v1, kind: Endpoints, metadata: {name: x}}
  - id: walrus
    template: {apiVersion: zoo.example.com/v1, kind: Walrus, metadata: {name: x}}
`,
			crds:   crds,
			mapper: mapper,
			want: []rbacv1.PolicyRule{
				policyRule("", []string{"endpoints"}, childAccess...),
				policyRule("networking.k8s.io", []string{"ingresses"}, childAccess...),
				// geese is parent and child: the union is the child's verbs.
				policyRule("zoo.example.com", []string{"geese", "octopodes", "walruses"}, childAccess...),
			},
			wantGuessed: []string{"Endpoints/v1", "Walrus.zoo.example.com/v1"},
		},
		{
			name: "a resource both parent and child gets the union of the verbs",
			rules: `- name: self
  parent: {apiVersion: v1, resource: configmaps}
  children:
  - id: copy
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
`,
			want: []rbacv1.PolicyRule{
				policyRule("", []string{"configmaps"}, childAccess...),
			},
			wantGuessed: []string{"ConfigMap/v1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := rules.Load([]byte(ruleSet(tt.rules)), rules.Options{})
			if err != nil {
				t.Fatal(err)
			}
			m := &kindMapping{crds: tt.crds, mapper: tt.mapper}
			got := policyRules(rs, m.resourceFor)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("policy rules (-want +got):\n%s", diff)
			}
			var guessed []string
			for _, g := range m.guessed {
				guessed = append(guessed, g.kind)
			}
			if diff := cmp.Diff(tt.wantGuessed, guessed); diff != "" {
				t.Errorf("guessed kinds (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEscalationNotes(t *testing.T) {
	rs, err := rules.Load([]byte(ruleSet(`- name: team
  parent: {apiVersion: v1, resource: namespaces}
  children:
  - id: binding
    template: {apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: x, namespace: ns}}
  - id: role
    template: {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: x}}
  - id: config
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: ns}}
`)), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`rule "team" child "binding" is a RoleBinding: the API server allows it only if the controller holds what it grants; grant "bind" on the roles it references (with resourceNames), or the permissions of those roles in a ClusterRole labelled kubecel.dev/aggregate-to-controller: "true"`,
		`rule "team" child "role" is a ClusterRole: the API server allows it only if the controller holds what it grants; grant the permissions it writes into the role, or "escalate" on roles in a ClusterRole labelled kubecel.dev/aggregate-to-controller: "true"`,
	}
	if diff := cmp.Diff(want, escalationNotes(rs)); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}

func ruleSet(rulesYAML string) string {
	return "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n" + rulesYAML
}

const webappRule = `- name: webapp
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: deployment
    template: {apiVersion: apps/v1, kind: Deployment, metadata: {name: x}}
  - id: service
    template: {apiVersion: v1, kind: Service, metadata: {name: x}}
  - id: config
    forEach: "[1, 2]"
    expr: '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c" + string(each)}}'
  status:
    fields: {ready: "${true}"}
`

var (
	parentAccess = []string{"get", "list", "patch", "watch"}
	childAccess  = []string{"create", "delete", "get", "list", "patch", "watch"}
)

func ptrTo[T any](v T) *T { return &v }
