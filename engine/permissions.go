package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/kubecel/kubecel/engine/internal/watch"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
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

// neededAccess lists what a rule needs, one verb per entry (watch.Rule.Access).
func neededAccess(st *watch.Rule) []access {
	var out []access
	for _, a := range st.Access() {
		for _, verb := range a.Verbs {
			out = append(out, access{GVR: a.Resource, Subresource: a.Subresource, Verb: verb, Namespace: a.Namespace})
		}
	}
	return out
}

// checkAccess asks the API server (SelfSubjectAccessReview) whether this controller may
// do everything the rule needs, and lists what it may not.
func checkAccess(ctx context.Context, kube kubernetes.Interface, st *watch.Rule) error {
	var denied []string
	for _, a := range neededAccess(st) {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: a.GVR.Group, Version: a.GVR.Version, Resource: a.GVR.Resource,
				Subresource: a.Subresource, Verb: a.Verb, Namespace: a.Namespace,
			},
		}}
		got, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
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
