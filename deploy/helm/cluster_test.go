package helm_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/restmapper"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

const fieldManager = "kubecel-helm-test"

func mapper(t *testing.T) meta.RESTMapper {
	t.Helper()
	groups, err := restmapper.GetAPIGroupResources(testenv.Kube(t).Discovery())
	if err != nil {
		t.Fatal(err)
	}
	return restmapper.NewDiscoveryRESTMapper(groups)
}

// createNamespaces creates namespaces for real (a dry run cannot go into a namespace that
// does not exist).
func createNamespaces(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}
		if _, err := testenv.Kube(t).CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// apply server-side applies obj, for real or as a dry run.
func apply(t *testing.T, m meta.RESTMapper, obj *unstructured.Unstructured, dryRun bool) error {
	t.Helper()
	mapping, err := m.RESTMapping(obj.GroupVersionKind().GroupKind(), obj.GroupVersionKind().Version)
	if err != nil {
		return fmt.Errorf("the API server does not serve %s: %w", obj.GroupVersionKind(), err)
	}
	opts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = testenv.Dynamic(t).Resource(mapping.Resource).Namespace(obj.GetNamespace()).Apply(t.Context(), obj.GetName(), obj, opts)
	return err
}

// refsRBAC is what kubecel rbac prints for testdata/refs-rules.yaml: a ClusterRole, and a
// Role and a RoleBinding in vault.
func refsRBAC(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(testenv.Kubecel(t), "rbac", "--rules", "testdata/refs-rules.yaml", "--kubeconfig", testenv.ControlPlane(t).Kubeconfig).Output()
	if err != nil {
		t.Fatalf("kubecel rbac: %v", err)
	}
	if !strings.Contains(string(out), "kind: RoleBinding") {
		t.Fatalf("kubecel rbac printed no RoleBinding:\n%s", out)
	}
	path := filepath.Join(t.TempDir(), "rules-rbac.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServerDryRun is `helm template ... | kubectl apply --server-side --dry-run=server -f -`
// for the defaults, every profile, the ServiceMonitor, and rules RBAC with Roles in other
// namespaces: the API server validates and admits every object (the Prometheus Operator's
// kinds against the CRDs of testdata/crds).
func TestServerDryRun(t *testing.T) {
	createNamespaces(t, "kubecel-rules", "vault")
	m := mapper(t)
	cases := map[string][]string{"servicemonitor": {"--set", "monitoring.serviceMonitor.enabled=true"}, "rules RBAC with Roles": {"--set-file", "rbac.rules=" + refsRBAC(t)}}
	for _, p := range profiles {
		cases["profile "+p] = profileArgs(p)
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			objs := render(t, "kubecel", "kubecel-system", args...)
			kinds := map[string]int{}
			for _, obj := range objs {
				kinds[obj.GetKind()]++
				if err := apply(t, m, obj, true); err != nil {
					t.Errorf("dry-run apply %s: %v", ref(obj), err)
				}
			}
			t.Logf("%d objects: %v", len(objs), kinds)
			switch name {
			case "servicemonitor":
				if kinds["ServiceMonitor"] != 1 || kinds["Service"] != 1 {
					t.Errorf("no ServiceMonitor and Service: %v", kinds)
				}
			case "rules RBAC with Roles":
				if kinds["Role"] != 2 || kinds["RoleBinding"] != 2 {
					t.Errorf("want the chart's Role and RoleBinding and those of vault: %v", kinds)
				}
			}
		})
	}
}

// TestInstalledChartConverges installs the chart for real, twice in one cluster: the
// defaults as release kubecel in kubecel-system, and the selector profile as release team-b
// in team-b-system (another installation, its rules in team-b-rules, a rule of its own).
// For each, kubecel runs with the chart's Deployment's arguments as the chart's
// ServiceAccount (a token from the TokenRequest API), with only the permissions of the
// chart's RBAC, which kube-controller-manager aggregates; it makes its identity Secret and
// converges the example rule's parent.
func TestInstalledChartConverges(t *testing.T) {
	teamB := strings.NewReplacer("kubecel.dev/default-limits", "example.com/team-b-limits", "name: default-limits", "name: team-b-limits", "kubecel-defaults", "team-b-defaults")
	base, err := os.ReadFile("../base/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	teamBRules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(teamBRules, []byte(teamB.Replace(string(base))), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, release, namespace, installation string
		args                                   []string
		parentLabel, child                     string
		namespaces                             []string
	}{
		{
			name: "defaults", release: "kubecel", namespace: "kubecel-system", installation: "kubecel",
			parentLabel: "kubecel.dev/default-limits", child: "kubecel-defaults",
		},
		{
			name: "selector profile, second installation", release: "team-b", namespace: "team-b-system", installation: "team-b-kubecel",
			args:        append(profileArgs("selector"), "--set", "rules.namespace=team-b-rules", "--set-file", "rules.inline="+teamBRules),
			parentLabel: "example.com/team-b-limits", child: "team-b-defaults",
			namespaces: []string{"team-b-system", "team-b-rules"},
		},
	}
	m := mapper(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			createNamespaces(t, tt.namespaces...)
			objs := render(t, tt.release, tt.namespace, tt.args...)
			var args []string
			for _, obj := range objs {
				if err := apply(t, m, obj, false); err != nil {
					t.Fatalf("apply %s: %v", ref(obj), err)
				}
				if obj.GetKind() == "Deployment" {
					args = containerArgs(t, obj)
				}
			}
			waitAggregated(t, tt.release)
			kubeconfig := testenv.ServiceAccountKubeconfig(t, tt.namespace, serviceAccount(t, objs))
			testenv.StartProcess(t, kubeconfig, testenv.Kubecel(t), append(args, "--metrics-addr", "127.0.0.1:0", "--health-addr", "127.0.0.1:0")...)
			checkConverges(t, tt.parentLabel, tt.child, tt.installation)
			if _, err := testenv.Kube(t).CoreV1().Secrets(tt.namespace).Get(t.Context(), tt.installation+"-identity", metav1.GetOptions{}); err != nil {
				t.Errorf("the installation's identity Secret: %v", err)
			}
		})
	}
}

// containerArgs are the arguments of the Deployment's container, what its pods run.
func containerArgs(t *testing.T, d *unstructured.Unstructured) []string {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	var args []string
	for _, a := range containers[0].(map[string]any)["args"].([]any) {
		args = append(args, a.(string))
	}
	if len(args) == 0 || args[0] != "run" {
		t.Fatalf("the Deployment runs %q, want kubecel run", args)
	}
	return args
}

func serviceAccount(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "ServiceAccount" {
			return o.GetName()
		}
	}
	t.Fatal("the chart made no ServiceAccount")
	return ""
}

// waitAggregated waits until kube-controller-manager has filled the release's aggregated
// ClusterRole with the rules of the base and rules roles.
func waitAggregated(t *testing.T, releaseName string) {
	t.Helper()
	name := releaseName + "-controller"
	if releaseName != "kubecel" {
		name = releaseName + "-kubecel-controller"
	}
	testenv.Eventually(t, 60*time.Second, func() (bool, string) {
		role, err := testenv.Kube(t).RbacV1().ClusterRoles().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		// kubecel-base has four rules, the default rules' role two.
		return len(role.Rules) >= 6, fmt.Sprintf("%s has %d rules", name, len(role.Rules))
	})
}

// checkConverges labels a new namespace as the rule's parent and waits for its child, a
// LimitRange proved by the installation.
func checkConverges(t *testing.T, label, child, installation string) {
	t.Helper()
	ns := testenv.Namespace(t)
	kube := testenv.Kube(t)
	parent, err := kube.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parent.Labels[label] = "true"
	if _, err := kube.CoreV1().Namespaces().Update(t.Context(), parent, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 90*time.Second, func() (bool, string) {
		lr, err := kube.CoreV1().LimitRanges(ns).Get(t.Context(), child, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if got := lr.Labels[contract.LabelInstallation]; got != installation {
			return false, fmt.Sprintf("the LimitRange's installation label is %q, want %q", got, installation)
		}
		if lr.Annotations[contract.AnnotationProof] == "" {
			return false, "the LimitRange has no proof"
		}
		return true, ""
	})
}
