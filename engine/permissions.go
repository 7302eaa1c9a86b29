package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// access is one permission a rule needs.
type access struct {
	GVR         schema.GroupVersionResource
	Subresource string
	Verb        string
	Namespace   string
}

func (a access) String() string {
	res := a.GVR.Resource
	if a.GVR.Group != "" {
		res += "." + a.GVR.Group
	}
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	where := "all namespaces"
	if a.Namespace != "" {
		where = "namespace " + a.Namespace
	}
	return fmt.Sprintf("%s %s in %s", a.Verb, res, where)
}

// neededAccess lists what a rule needs, the same set `kubecel rbac` prints: read and
// patch its parents (patch for the cleanup finalizer), patch their status when the rule
// writes it, and read, create, patch and delete its children. Child informers watch all
// namespaces, so child permissions are checked cluster-wide.
func neededAccess(st *ruleState) []access {
	var out []access
	namespaces := st.rule.Parent.Namespaces
	if len(namespaces) == 0 || !st.parent.Namespaced {
		namespaces = []string{""}
	}
	for _, ns := range namespaces {
		for _, verb := range []string{"get", "list", "watch", "patch"} {
			out = append(out, access{GVR: st.parent.GVR, Verb: verb, Namespace: ns})
		}
		if st.rule.HasStatus {
			out = append(out, access{GVR: st.parent.GVR, Subresource: "status", Verb: "patch", Namespace: ns})
		}
	}
	for _, ck := range st.children {
		for _, verb := range []string{"get", "list", "watch", "create", "patch", "delete"} {
			out = append(out, access{GVR: ck.GVR, Verb: verb})
		}
	}
	return out
}

// checkAccess asks the API server (SelfSubjectAccessReview) whether this controller may
// do everything the rule needs, and lists what it may not.
func (c *Controller) checkAccess(ctx context.Context, st *ruleState) error {
	var denied []string
	for _, a := range neededAccess(st) {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: a.GVR.Group, Version: a.GVR.Version, Resource: a.GVR.Resource,
				Subresource: a.Subresource, Verb: a.Verb, Namespace: a.Namespace,
			},
		}}
		got, err := c.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("check permissions: %w", err)
		}
		if !got.Status.Allowed {
			denied = append(denied, a.String())
		}
	}
	if len(denied) > 0 {
		sort.Strings(denied)
		return &forbiddenError{missing: denied}
	}
	return nil
}

// forbiddenError lists the permissions a rule lacks.
type forbiddenError struct{ missing []string }

func (e *forbiddenError) Error() string {
	return "missing permissions (add them with `kubecel rbac`): " + strings.Join(e.missing, "; ")
}
