package access

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/internal/testenv"
)

// countingTransport counts the requests that create access and rules reviews.
type countingTransport struct {
	next http.RoundTripper
	mu   sync.Mutex
	got  map[string]int // by resource
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost {
		for _, res := range []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"} {
			if strings.HasSuffix(req.URL.Path, "/"+res) {
				c.mu.Lock()
				c.got[res]++
				c.mu.Unlock()
			}
		}
	}
	return c.next.RoundTrip(req)
}

func (c *countingTransport) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.got
	c.got = map[string]int{}
	return got
}

// TestGrantedOnTheServer asks the real authorizer, as a user bound to a ClusterRole and,
// in one namespace, to a Role: what the ClusterRole grants is answered by one rules
// review, in every namespace; what the Role grants answers in its namespace and never
// for all namespaces (that would start a rule whose cluster-wide watch is refused);
// what neither grants is missing.
func TestGrantedOnTheServer(t *testing.T) {
	ns := testenv.Namespace(t)
	admin := testenv.Kube(t)
	user := "granted-" + ns
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	role := rbacv1.PolicyRule{APIGroups: []string{"example.kubecel.dev"}, Resources: []string{"widgets", "widgets/status"}, Verbs: []string{"get", "list", "watch", "patch"}}
	clusterRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{role}}
	if _, err := admin.RbacV1().ClusterRoles().Create(t.Context(), clusterRole, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(t.Context(), user, metav1.DeleteOptions{})
		_ = admin.RbacV1().ClusterRoles().Delete(t.Context(), user, metav1.DeleteOptions{})
	})
	local := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "configmaps"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}}}}
	if _, err := admin.RbacV1().Roles(ns).Create(t.Context(), local, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	localBinding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "configmaps"}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "configmaps"}}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(t.Context(), localBinding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitAllowed(t, user, authorizationv1.ResourceAttributes{Group: "example.kubecel.dev", Resource: "widgets", Verb: "list"})
	testenv.WaitAllowed(t, user, authorizationv1.ResourceAttributes{Namespace: ns, Resource: "configmaps", Verb: "watch"})

	counter := &countingTransport{got: map[string]int{}}
	cfg := rest.CopyConfig(testenv.Config(t))
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	kube := kubernetes.NewForConfigOrDie(cfg)

	widgetsIn := func(namespace string) []Permission {
		var ps []Permission
		for _, verb := range []string{"get", "list", "watch", "patch"} {
			ps = append(ps, Permission{GVR: widgets, Verb: verb, Namespace: namespace})
		}
		return append(ps, Permission{GVR: widgets, Subresource: "status", Verb: "patch", Namespace: namespace})
	}
	tests := []struct {
		name        string
		need        []Permission
		wantMissing []string
		want        map[string]int // reviews sent
	}{{
		name: "the ClusterRole's permissions, in all namespaces",
		need: widgetsIn(""),
		want: map[string]int{"selfsubjectrulesreviews": 1},
	}, {
		name: "the ClusterRole's and the Role's, in the Role's namespace",
		need: append(widgetsIn(ns), Permission{GVR: configMaps, Verb: "list", Namespace: ns}, Permission{GVR: configMaps, Verb: "watch", Namespace: ns}),
		want: map[string]int{"selfsubjectrulesreviews": 1},
	}, {
		name:        "the Role's permissions, in all namespaces",
		need:        []Permission{{GVR: configMaps, Verb: "list"}, {GVR: configMaps, Verb: "watch"}},
		wantMissing: []string{"list configmaps in all namespaces", "watch configmaps in all namespaces"},
		// The rules review of all namespaces, that of the core group's everything, and
		// one access review each.
		want: map[string]int{"selfsubjectrulesreviews": 1, "selfsubjectaccessreviews": 3},
	}, {
		name:        "a permission nothing grants",
		need:        []Permission{{GVR: widgets, Verb: "delete", Namespace: ns}},
		wantMissing: []string{"delete widgets.example.kubecel.dev in namespace " + ns},
		want:        map[string]int{"selfsubjectrulesreviews": 1, "selfsubjectaccessreviews": 2},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counter.take()
			checkMissing(t, NewReviews(kube).Check(t.Context(), tt.need), tt.wantMissing)
			if diff := cmp.Diff(tt.want, counter.take()); diff != "" {
				t.Errorf("reviews sent (-want +got):\n%s", diff)
			}
		})
	}
}
