package access

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// A SelfSubjectRulesReview lists the rules the authorizer grants the controller in one
// namespace: those of its ClusterRoleBindings and of the RoleBindings in that namespace.
// One such review answers, without a review each, every permission in that namespace
// that its rules cover (the RBAC authorizer's own matching, as
// k8s.io/component-helpers' Covers does it). A permission in all namespaces is covered
// only by cluster-wide grants: those are the rules of a namespace that cannot exist
// (clusterScope, no valid namespace name), in which no RoleBinding can be.
//
// The list is a lower bound. An authorizer that cannot list its rules (a webhook) marks
// the review incomplete, and a review may fail or be forbidden: what the list does not
// cover is asked with a SelfSubjectAccessReview, as before.

// clusterScope is the namespace whose rules review lists the cluster-wide grants alone:
// the colon makes it a name no namespace can have.
const clusterScope = "kubecel:all-namespaces"

// covered reports whether the rules the controller was granted where p applies cover p,
// asking for them when this Reviews has not yet.
func (r *Reviews) covered(ctx context.Context, p Permission) bool {
	ns := p.Namespace
	if ns == "" {
		ns = clusterScope
	}
	rules, err := askOnce(ctx, &r.mu, r.granted, ns, func() []rbacv1.PolicyRule { return r.rulesIn(ctx, ns) },
		func([]rbacv1.PolicyRule) bool { return false })
	if err != nil {
		return false
	}
	res := p.GVR.Resource
	if p.Subresource != "" {
		res += "/" + p.Subresource
	}
	ok, _ := validation.Covers(rules, []rbacv1.PolicyRule{{APIGroups: []string{p.GVR.Group}, Resources: []string{res}, Verbs: []string{p.Verb}}})
	return ok
}

// rulesIn sends the rules review of namespace ns; nil when it failed. A failure is kept
// for the operation: each permission is then asked on its own.
func (r *Reviews) rulesIn(ctx context.Context, ns string) []rbacv1.PolicyRule {
	review := &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}
	got, err := r.kube.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return nil
	}
	rules := make([]rbacv1.PolicyRule, 0, len(got.Status.ResourceRules))
	for _, rr := range got.Status.ResourceRules {
		rules = append(rules, rbacv1.PolicyRule{Verbs: rr.Verbs, APIGroups: rr.APIGroups, Resources: rr.Resources, ResourceNames: rr.ResourceNames})
	}
	return rules
}
