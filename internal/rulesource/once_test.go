package rulesource

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

// TestLoadOnce reads sources once as a Loader's start does: a file and a named
// ConfigMap join in order; a ConfigMap of a selector that does not load is left out and
// said; a named ConfigMap that is missing is the error. The named ConfigMap is read as a
// user that may only list it, and not watch it.
func TestLoadOnce(t *testing.T) {
	ns := testenv.Namespace(t)
	admin := testenv.Kube(t)
	team := map[string]string{"kubecel.dev/rules": "true"}
	putConfigMap(t, admin, ns, "kubecel-rules", nil, map[string]string{"rules.yaml": ruleDoc("named")})
	putConfigMap(t, admin, ns, "team-a", team, map[string]string{"rules.yaml": ruleDoc("a")})
	putConfigMap(t, admin, ns, "team-b", team, map[string]string{"rules.yaml": ruleDoc("b!")})
	file := filepath.Join(t.TempDir(), "rules.yaml")
	write(t, file, ruleDoc("filed"))

	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "list-rules"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"kubecel-rules"}, Verbs: []string{"list"}},
	}}
	if _, err := admin.RbacV1().Roles(ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "list-rules"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "list-rules"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "rules-lister"}}}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitAllowed(t, "rules-lister", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Resource: "configmaps", Name: "kubecel-rules"})
	cfg := testenv.Config(t)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "rules-lister"}
	lister := kubernetes.NewForConfigOrDie(cfg)

	selector := labels.SelectorFromSet(team)
	key := func(cm string) string { return "configmap " + ns + "/" + cm + " key rules.yaml" }
	tests := []struct {
		name    string
		sources []Source
		want    []string // name@source#origin
		leftOut []string
		wantErr string
	}{{
		name:    "a file, then a named ConfigMap only listed",
		sources: []Source{File(file), ConfigMap(lister, ns, "kubecel-rules")},
		want:    []string{"filed@" + file + "#", "named@" + key("kubecel-rules") + "#"},
	}, {
		name:    "a selector: a ConfigMap that does not load is left out",
		sources: []Source{ConfigMapSelector(admin, ns, selector)},
		want:    []string{"a@" + key("team-a") + "#configmap " + ns + "/team-a"},
		leftOut: []string{"configmap " + ns + "/team-b"},
	}, {
		name:    "a named ConfigMap that is missing",
		sources: []Source{ConfigMap(admin, ns, "nowhere")},
		wantErr: "configmap " + ns + "/nowhere not found: create it, or name another with --rules-configmap",
	}, {
		name:    "a named ConfigMap that cannot be listed",
		sources: []Source{ConfigMap(lister, ns, "team-a")},
		wantErr: "read configmap " + ns + "/team-a: configmaps \"team-a\" is forbidden: User \"rules-lister\" cannot list resource \"configmaps\"",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var leftOut []string
			rs, err := LoadOnce(testContext(t), tt.sources, rules.Options{}, func(source string, err error) {
				if err == nil {
					t.Errorf("%s left out without a reason", source)
				}
				leftOut = append(leftOut, source)
			})
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rs.Rules {
				got = append(got, r.Name+"@"+r.Source+"#"+r.Origin)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.leftOut, leftOut); diff != "" {
				t.Errorf("left out (-want +got):\n%s", diff)
			}
		})
	}
}
