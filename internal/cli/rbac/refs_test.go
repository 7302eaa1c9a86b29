package rbac

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubecel/kubecel/rules"
)

// TestRefGrants: refs are read with list and watch, in the ClusterRole when they may read
// every namespace, else in a Role (bound to the controller's ServiceAccount) in each
// namespace the rule confines them to.
func TestRefGrants(t *testing.T) {
	const child = `
  children:
  - id: c
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
`
	refRead := policyRule("", []string{"secrets"}, "list", "watch")
	tests := []struct {
		name        string
		rule        string
		wantCluster bool
		wantRoles   []string // namespaces
	}{
		{"every namespace", `- name: app
  parent: {apiVersion: example.com/v1, resource: apps}
  refs: [{id: db, apiVersion: v1, kind: Secret, name: x}]` + child, true, nil},
		{"the rule's namespaces", `- name: app
  parent: {apiVersion: example.com/v1, resource: apps, namespaces: [b, a]}
  refs: [{id: db, apiVersion: v1, kind: Secret, name: x}]` + child, false, []string{"a", "b"}},
		{"a literal namespace", `- name: app
  parent: {apiVersion: example.com/v1, resource: apps}
  refs: [{id: db, apiVersion: v1, kind: Secret, name: x, namespace: vault, crossNamespace: true}]` + child, false, []string{"vault"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := rules.Load([]byte(ruleSet(tt.rule)), rules.Options{})
			if err != nil {
				t.Fatal(err)
			}
			m := &kindMapping{}
			if got := slices.ContainsFunc(policyRules(rs, m.resourceFor), func(r rbacv1.PolicyRule) bool {
				return cmp.Equal(r, refRead)
			}); got != tt.wantCluster {
				t.Errorf("the ClusterRole grants list and watch on secrets: %v, want %v", got, tt.wantCluster)
			}
			var namespaces []string
			for _, obj := range RefRoles("kubecel-rules", rs, m.resourceFor, "kubecel-system/kubecel") {
				switch o := obj.(type) {
				case *rbacv1.Role:
					namespaces = append(namespaces, o.Namespace)
					if diff := cmp.Diff([]rbacv1.PolicyRule{refRead}, o.Rules); diff != "" {
						t.Errorf("Role in %s (-want +got):\n%s", o.Namespace, diff)
					}
				case *rbacv1.RoleBinding:
					want := rbacv1.Subject{Kind: "ServiceAccount", Name: "kubecel", Namespace: "kubecel-system"}
					if len(o.Subjects) != 1 || o.Subjects[0] != want || o.RoleRef.Name != "kubecel-rules" || o.Namespace != namespaces[len(namespaces)-1] {
						t.Errorf("RoleBinding %s/%s binds %v to %v", o.Namespace, o.Name, o.RoleRef, o.Subjects)
					}
				}
			}
			if diff := cmp.Diff(tt.wantRoles, namespaces); diff != "" {
				t.Errorf("Roles' namespaces (-want +got):\n%s", diff)
			}
		})
	}
}
