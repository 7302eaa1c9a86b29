package rbac

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
// deploy/base/rbac.yaml) aggregates: the fixed base role and the output of
// `kubecel rbac`.
const aggregateLabel = "kubecel.dev/aggregate-to-controller"

// ResourceMapper maps a child's kind to the resource that serves it.
type ResourceMapper func(schema.GroupVersionKind) schema.GroupVersionResource

// ClusterRole returns the least-privilege ClusterRole that the rules need,
// named name and labelled for aggregation into the controller's ClusterRole. The reads
// of refs that the rules confine to named namespaces are not in it: see refRoles.
func ClusterRole(name string, rs *rules.RuleSet, resourceFor ResourceMapper) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{aggregateLabel: "true"},
		},
		Rules: policyRules(rs, resourceFor),
	}
}

// policyRules computes the access the rules need in every namespace.
func policyRules(rs *rules.RuleSet, resourceFor ResourceMapper) []rbacv1.PolicyRule {
	cluster, _ := neededAccess(rs, resourceFor)
	return mergeRules(cluster)
}

// neededAccess lists what the rules need: in every namespace (the ClusterRole), and in
// named namespaces only (the reads of refs that the rules confine there), by namespace.
func neededAccess(rs *rules.RuleSet, resourceFor ResourceMapper) (cluster []rules.Access, byNamespace map[string][]rules.Access) {
	byNamespace = map[string][]rules.Access{}
	for _, r := range rs.Rules {
		var children []schema.GroupVersionResource
		for _, c := range r.Children {
			children = append(children, resourceFor(c.GVK))
		}
		// The same list the controller checks before it starts a rule (rules.Rule.Access),
		// merged over rules and namespaces: a ClusterRole cannot be narrower.
		cluster = append(cluster, r.Access(true, children)...)
		for _, ref := range r.Refs {
			for _, a := range r.RefAccess(ref, resourceFor(ref.GVK), true) {
				if a.Namespace == "" {
					cluster = append(cluster, a)
				} else {
					byNamespace[a.Namespace] = append(byNamespace[a.Namespace], a)
				}
			}
		}
	}
	return cluster, byNamespace
}

// mergeRules merges access into PolicyRules. Verbs are merged per group and resource;
// resources of one API group that need the same verbs share a PolicyRule. Resources that
// need different verbs get separate PolicyRules: a single rule per group would grant
// every resource the union of the verbs. The result is sorted by group, then by
// resource, so the output is stable.
func mergeRules(access []rules.Access) []rbacv1.PolicyRule {
	need := map[schema.GroupResource]map[string]bool{}
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

// RefRoles returns, for each namespace to which the rules confine the reads of refs, a
// Role with those reads and a RoleBinding of it to the controller's ServiceAccount
// (NAMESPACE/NAME), sorted by namespace: none when every ref may read every namespace.
func RefRoles(name string, rs *rules.RuleSet, resourceFor ResourceMapper, serviceAccount string) []any {
	_, byNamespace := neededAccess(rs, resourceFor)
	saNamespace, saName, _ := strings.Cut(serviceAccount, "/")
	var out []any
	for _, ns := range sortedKeys(byNamespace) {
		meta := metav1.ObjectMeta{Name: name, Namespace: ns}
		out = append(out,
			&rbacv1.Role{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
				ObjectMeta: meta,
				Rules:      mergeRules(byNamespace[ns]),
			},
			&rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
				ObjectMeta: meta,
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: saName, Namespace: saNamespace}},
			})
	}
	return out
}

func sortedKeys[V any](set map[string]V) []string {
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
