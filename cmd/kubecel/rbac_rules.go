package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules"
)

// aggregateLabel marks the ClusterRoles that the controller's ClusterRole (in
// deploy/rbac.yaml) aggregates: the fixed base role and the output of `kubecel rbac`.
const aggregateLabel = "kubecel.dev/aggregate-to-controller"

// resourceMapper maps a child's kind to the resource that serves it.
type resourceMapper func(schema.GroupVersionKind) schema.GroupVersionResource

// rulesClusterRole returns the least-privilege ClusterRole that the rules of rs need,
// named name and labelled for aggregation into the controller's ClusterRole.
func rulesClusterRole(name string, rs *rules.RuleSet, resourceFor resourceMapper) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{aggregateLabel: "true"},
		},
		Rules: policyRules(rs, resourceFor),
	}
}

// policyRules computes the access the rules need. Verbs are merged per group and
// resource; resources of one API group that need the same verbs share a PolicyRule.
// Resources that need different verbs get separate PolicyRules: a single rule per
// group would grant every resource the union of the verbs. The result is sorted by
// group, then by resource, so the output is stable.
func policyRules(rs *rules.RuleSet, resourceFor resourceMapper) []rbacv1.PolicyRule {
	// The same list the controller checks before it starts a rule (rules.Rule.Access),
	// merged over rules and namespaces: a ClusterRole cannot be narrower.
	need := map[schema.GroupResource]map[string]bool{}
	for _, r := range rs.Rules {
		var children []schema.GroupVersionResource
		for _, c := range r.Children {
			children = append(children, resourceFor(c.GVK))
		}
		access := r.Access(true, children)
		for _, ref := range r.Refs {
			access = append(access, r.RefAccess(ref, resourceFor(ref.GVK), true)...)
		}
		for _, a := range access {
			gr := a.Resource.GroupResource()
			if a.Subresource != "" {
				gr.Resource += "/" + a.Subresource
			}
			if need[gr] == nil {
				need[gr] = map[string]bool{}
			}
			for _, v := range a.Verbs {
				need[gr][v] = true
			}
		}
	}

	// Group the resources of each API group by their verb set.
	type ruleKey struct{ group, verbs string }
	byKey := map[ruleKey]*rbacv1.PolicyRule{}
	var out []*rbacv1.PolicyRule
	for gr, set := range need {
		verbs := sortedKeys(set)
		k := ruleKey{gr.Group, strings.Join(verbs, ",")}
		pr := byKey[k]
		if pr == nil {
			pr = &rbacv1.PolicyRule{APIGroups: []string{gr.Group}, Verbs: verbs}
			byKey[k] = pr
			out = append(out, pr)
		}
		pr.Resources = append(pr.Resources, gr.Resource)
	}
	result := make([]rbacv1.PolicyRule, 0, len(out))
	for _, pr := range out {
		slices.Sort(pr.Resources)
		result = append(result, *pr)
	}
	slices.SortFunc(result, func(a, b rbacv1.PolicyRule) int {
		return cmp.Or(cmp.Compare(a.APIGroups[0], b.APIGroups[0]), cmp.Compare(a.Resources[0], b.Resources[0]))
	})
	return result
}

func sortedKeys(set map[string]bool) []string {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// escalationNotes explains, for each child that is an RBAC object, the permission the
// API server's escalation check wants on top of the role: it lets the controller bind a
// role, or write a role, only when it holds every permission in it or has the bind or
// escalate verb. Neither can be derived from the rules (the role a binding references
// may be computed), and granting them on every role would be far from least privilege.
func escalationNotes(rs *rules.RuleSet) []string {
	var notes []string
	for _, r := range rs.Rules {
		for _, c := range r.Children {
			if c.GVK.Group != rbacv1.GroupName {
				continue
			}
			var what string
			switch c.GVK.Kind {
			case "RoleBinding", "ClusterRoleBinding":
				what = `grant "bind" on the roles it references (with resourceNames), or the permissions of those roles`
			case "Role", "ClusterRole":
				what = `grant the permissions it writes into the role, or "escalate" on roles`
			default:
				continue
			}
			notes = append(notes, fmt.Sprintf("rule %q child %q is a %s: the API server allows it only if the controller holds what it grants; %s in a ClusterRole labelled %s: \"true\"",
				r.Name, c.ID, c.GVK.Kind, what, aggregateLabel))
		}
	}
	return notes
}
