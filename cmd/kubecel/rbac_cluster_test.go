package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/cli/rbac"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

// yamlDocs splits a multi-document YAML file into objects.
func yamlDocs(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := map[string]any{}
		if err := dec.Decode(&obj); err != nil {
			break
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
	return out
}

// leastPrivilegeExamples are the examples run under least privilege. namespace-defaults
// is not among them: its RoleBinding child grants ClusterRole edit, which needs `bind`
// (or edit's own permissions), something `kubecel rbac` reports but does not grant.
var leastPrivilegeExamples = []string{"webapp", "database", "service-per-pod"}

// joinRules concatenates the rule lists of several one-rule example files.
func joinRules(t *testing.T, names []string) []byte {
	t.Helper()
	out := []byte("apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n")
	for _, name := range names {
		data, err := os.ReadFile("../../examples/" + name + "/rules.yaml")
		if err != nil {
			t.Fatal(err)
		}
		_, body, ok := bytes.Cut(data, []byte("\nrules:\n"))
		if !ok {
			t.Fatalf("%s/rules.yaml: no top-level rules list", name)
		}
		out = append(out, body...)
	}
	return out
}

// installCRD creates a CRD from a file and waits until it is established.
func installCRD(t *testing.T, path string) {
	t.Helper()
	ctx := t.Context()
	crdData, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(crdData, &crd); err != nil {
		t.Fatal(err)
	}
	crds := apiextensionsclient.NewForConfigOrDie(testenv.Config(t)).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, &crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, "not established"
	})
}

// TestLeastPrivilegeRBAC runs the controller as a ServiceAccount that has only what
// `kubecel rbac` prints for the examples plus kubecel-base from deploy/base: the
// examples converge. A rule needing more is reported as forbidden and not started.
func TestLeastPrivilegeRBAC(t *testing.T) {
	ctx := t.Context()
	ns := testenv.Namespace(t)
	kube := testenv.Kube(t)

	for _, name := range leastPrivilegeExamples {
		if _, err := os.Stat("../../examples/" + name + "/crd.yaml"); err == nil {
			installCRD(t, "../../examples/"+name+"/crd.yaml")
		}
	}
	exampleRules := joinRules(t, leastPrivilegeExamples)
	rs, err := rules.Load(exampleRules, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}

	// The printed role, mapped with the cluster's discovery, and deploy/base's kubecel-base.
	groups, err := restmapper.GetAPIGroupResources(kube.Discovery())
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	resourceFor := func(gvk schema.GroupVersionKind) schema.GroupVersionResource {
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("map %s: %v", gvk, err)
		}
		return m.Resource
	}
	roleName := ns + "-rules"
	role := rbac.ClusterRole(roleName, rs, resourceFor)
	grantServiceAccount(t, ns, role)

	// A second rule that needs Secrets, which the role does not grant.
	secretRule := `
  - name: needs-secrets
    parent: {apiVersion: example.kubecel.dev/v1, resource: webapps}
    children:
      - id: secret
        template:
          apiVersion: v1
          kind: Secret
          metadata: {name: "${parent.metadata.name}-secret"}
          stringData: {token: "x"}
`
	both, err := rules.Load(append(append([]byte{}, exampleRules...), secretRule...), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}

	cfg := testenv.Config(t)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":kubecel"}
	var mu sync.Mutex
	var notes []string
	ctrl, err := engine.New(cfg, engine.Options{Identity: testenv.Identity(t), Notify: func(_ context.Context, rule, reason, msg string) {
		mu.Lock()
		defer mu.Unlock()
		notes = append(notes, fmt.Sprintf("%s %s %s", rule, reason, msg))
	}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	ctrl.SetRules(runCtx, both)
	var wg sync.WaitGroup
	wg.Go(func() { _ = ctrl.Run(runCtx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	_, pending := ctrl.Ready()
	if !slices.Equal(pending, []string{"needs-secrets"}) {
		t.Errorf("pending rules = %v, want [needs-secrets]", pending)
	}
	mu.Lock()
	if len(notes) != 1 || !bytes.Contains([]byte(notes[0]), []byte("Forbidden")) || !bytes.Contains([]byte(notes[0]), []byte("secrets")) {
		t.Errorf("notifications = %q, want one Forbidden naming secrets", notes)
	}
	mu.Unlock()

	// The examples converge with only the printed permissions: every child their rules
	// want exists, and the parents with a status report Synced.
	dyn := testenv.Dynamic(t)
	for _, name := range leastPrivilegeExamples {
		for _, p := range yamlDocs(t, "../../examples/"+name+"/parents.yaml") {
			p.SetNamespace(ns)
			gvr, err := mapper.RESTMapping(p.GroupVersionKind().GroupKind(), p.GroupVersionKind().Version)
			if err != nil {
				t.Fatalf("map %s: %v", p.GroupVersionKind(), err)
			}
			if _, err := dyn.Resource(gvr.Resource).Namespace(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	webapps := schema.GroupVersionResource{Group: "example.kubecel.dev", Version: "v1", Resource: "webapps"}
	databases := schema.GroupVersionResource{Group: "example.kubecel.dev", Version: "v1", Resource: "databases"}
	testenv.Eventually(t, 60*time.Second, func() (bool, string) {
		for _, gvr := range []schema.GroupVersionResource{webapps, databases} {
			list, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, w := range list.Items {
				if !isTrue(testenv.Condition(&w, "Synced")) {
					return false, fmt.Sprintf("%s %s not Synced: %v", gvr.Resource, w.GetName(), w.Object["status"])
				}
			}
		}
		deploys, err := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(deploys.Items) == 0 {
			return false, fmt.Sprintf("no webapp Deployments yet (err %v)", err)
		}
		cms, err := kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubecel.dev/rule=database"})
		if err != nil || len(cms.Items) == 0 {
			return false, fmt.Sprintf("no database connection ConfigMaps yet (err %v)", err)
		}
		svcs, err := kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubecel.dev/rule=service-per-pod"})
		if err != nil || len(svcs.Items) == 0 {
			return false, fmt.Sprintf("no per-pod Services yet (err %v)", err)
		}
		return true, ""
	})
	secrets, err := kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) != 0 {
		t.Errorf("the forbidden rule created %d secrets", len(secrets.Items))
	}
}

// grantServiceAccount creates the ServiceAccount kubecel in ns and binds to it the given
// ClusterRoles and kubecel-base from deploy/base (all removed when the test ends).
func grantServiceAccount(t *testing.T, ns string, roles ...*rbacv1.ClusterRole) {
	t.Helper()
	ctx := t.Context()
	kube := testenv.Kube(t)
	var base *rbacv1.ClusterRole
	for _, o := range yamlDocs(t, "../../deploy/base/rbac.yaml") {
		if o.GetKind() == "ClusterRole" && o.GetName() == "kubecel-base" {
			base = &rbacv1.ClusterRole{}
			data, _ := yaml.Marshal(o.Object)
			if err := yaml.Unmarshal(data, base); err != nil {
				t.Fatal(err)
			}
		}
	}
	if base == nil {
		t.Fatal("deploy/base/rbac.yaml has no ClusterRole kubecel-base")
	}
	base.Name, base.Labels = ns+"-base", nil
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "kubecel", Namespace: ns}}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range append(roles, base) {
		if _, err := kube.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: r.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: r.Name},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "kubecel", Namespace: ns}},
		}
		if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), r.Name, metav1.DeleteOptions{})
			_ = kube.RbacV1().ClusterRoles().Delete(context.Background(), r.Name, metav1.DeleteOptions{})
		})
	}
}

func isTrue(status, _, _ string) bool { return status == "True" }

// TestRBACConnection: rbac maps kinds with the cluster of $KUBECONFIG as with that of
// --kubeconfig, and a cluster it cannot reach is the same error from either; only no
// kubeconfig at all lets it guess.
func TestRBACConnection(t *testing.T) {
	rulesFile := filepath.Join(t.TempDir(), "rules.yaml")
	rule := strings.ReplaceAll(webappRule, "example.com/v1, resource: webapps", "plan.kubecel.dev/v1, resource: gadgets")
	if err := os.WriteFile(rulesFile, []byte(ruleSet(rule)), 0o644); err != nil {
		t.Fatal(err)
	}
	live := testenv.ControlPlane(t).Kubeconfig
	closed := testenv.ClosedPortKubeconfig(t)
	absent := filepath.Join(t.TempDir(), "absent")
	const unreachable = `read the cluster's resources: cannot reach the API server at https://127.0.0.1:1: Get "https://127.0.0.1:1/version?timeout=15s": dial tcp 127.0.0.1:1: connect: connection refused`
	tests := []struct {
		name        string
		env         string // $KUBECONFIG
		args        []string
		code        int
		wantErr     string
		wantGuesses bool
	}{
		{name: "cluster from --kubeconfig", env: absent, args: []string{"--kubeconfig", live}},
		{name: "cluster from $KUBECONFIG", env: live},
		{name: "closed port from --kubeconfig", env: absent, args: []string{"--kubeconfig", closed}, code: 1, wantErr: unreachable},
		{name: "closed port from $KUBECONFIG", env: closed, code: 1, wantErr: unreachable},
		{name: "no kubeconfig: guesses", env: absent, wantGuesses: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tt.env)
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			stdout, stderr, code := runRoot(t, append([]string{"rbac", "--rules", rulesFile}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit code %d, want %d\n%s", code, tt.code, stderr)
			}
			if tt.code != 0 {
				if stdout != "" || strings.TrimSpace(stderr) != "Error: "+tt.wantErr {
					t.Errorf("stdout %q, stderr %q; want nothing and the error %q", stdout, stderr, tt.wantErr)
				}
				return
			}
			if guessed := strings.Contains(stderr, "guessed resource"); guessed != tt.wantGuesses {
				t.Errorf("guessed kinds: %v, want %v; stderr:\n%s", guessed, tt.wantGuesses, stderr)
			}
			if !strings.Contains(stdout, "- gadgets\n") || !strings.Contains(stdout, "- deployments\n") {
				t.Errorf("the role lacks gadgets or deployments:\n%s", stdout)
			}
		})
	}
}
