package testenv

import (
	"fmt"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WaitAllowed waits until the API server's authorizer lets user do what attrs says.
// The authorizer learns of a new Role or binding from a watch, so a request sent right
// after the binding was created may still be refused; a test that binds a Role and then
// acts as the user waits here first (a SubjectAccessReview asks the same authorizer).
func WaitAllowed(t testing.TB, user string, attrs authorizationv1.ResourceAttributes) {
	t.Helper()
	kube := Kube(t)
	Eventually(t, 30*time.Second, func() (bool, string) {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &attrs}}
		got, err := kube.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), review, metav1.CreateOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.Allowed, fmt.Sprintf("%s may not %s %s %q in %q yet: %s", user, attrs.Verb, attrs.Resource, attrs.Name, attrs.Namespace, got.Status.Reason)
	})
}
