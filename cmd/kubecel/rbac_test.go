package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ruleSet wraps a YAML list of rules in the file header.
func ruleSet(rulesYAML string) string {
	return "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n" + rulesYAML
}

const webappRule = `- name: webapp
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: deployment
    template: {apiVersion: apps/v1, kind: Deployment, metadata: {name: x}}
  - id: service
    template: {apiVersion: v1, kind: Service, metadata: {name: x}}
  - id: config
    forEach: "[1, 2]"
    expr: '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c" + string(each)}}'
  status:
    fields: {ready: "${true}"}
`

func ptrTo[T any](v T) *T { return &v }

// noCluster makes the kubeconfig lookup find nothing, so that kinds are guessed.
func noCluster(t *testing.T) {
	t.Helper()
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "absent"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
}

func runRBAC(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRootCommand()
	cmd.SetArgs(append([]string{"rbac"}, args...))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

func TestRBACCommand(t *testing.T) {
	noCluster(t)
	file := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(file, []byte(ruleSet(webappRule)), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runRBAC(t, "--rules", file, "--name", "webapp-rules")
	if err != nil {
		t.Fatalf("rbac: %v\n%s", err, stderr)
	}
	want := `# The permissions that the rules need, from "kubecel rbac". Regenerate it after editing the rules.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  labels:
    kubecel.dev/aggregate-to-controller: "true"
  name: webapp-rules
rules:
- apiGroups:
  - ""
  resources:
  - configmaps
  - services
  verbs:
  - create
  - delete
  - get
  - list
  - patch
  - watch
- apiGroups:
  - apps
  resources:
  - deployments
  verbs:
  - create
  - delete
  - get
  - list
  - patch
  - watch
- apiGroups:
  - example.com
  resources:
  - webapps
  verbs:
  - get
  - list
  - patch
  - watch
- apiGroups:
  - example.com
  resources:
  - webapps/status
  verbs:
  - patch
`
	if diff := cmp.Diff(want, stdout); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	wantErr := `note: cannot read the cluster's resources (no kubeconfig and not in a cluster), so the resources of kinds are guessed from their names
note: guessed resource "deployments" for kind Deployment.apps/v1; check it, or pass --crds DIR with its CRD, or --kubeconfig
note: guessed resource "services" for kind Service/v1; check it, or pass --crds DIR with its CRD, or --kubeconfig
note: guessed resource "configmaps" for kind ConfigMap/v1; check it, or pass --crds DIR with its CRD, or --kubeconfig
`
	if diff := cmp.Diff(wantErr, stderr); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
}

func TestRBACCommandErrors(t *testing.T) {
	noCluster(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte(ruleSet(webappRule)), 0o644); err != nil {
		t.Fatal(err)
	}
	notCRDs := filepath.Join(dir, "not-crds")
	if err := os.Mkdir(notCRDs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notCRDs, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(ruleSet(strings.Replace(webappRule, "  - id: service\n", "  - id: service\n    bogus: 1\n", 1))), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string // a substring of the error
	}{
		{"rules flag missing", nil, `required flag(s) "rules" not set`},
		{"rules file missing", []string{"--rules", filepath.Join(dir, "none.yaml")}, "none.yaml: no such file or directory"},
		{"rules do not load", []string{"--rules", bad}, "load rules:\n" + bad + `:10: rule "webapp" child "service": bogus: unknown field`},
		{"explicit kubeconfig missing", []string{"--rules", good, "--kubeconfig", filepath.Join(dir, "kubeconfig")},
			"read the cluster's resources: read kubeconfig: stat " + filepath.Join(dir, "kubeconfig") + ": no such file or directory"},
		{"crds directory without CRDs", []string{"--rules", good, "--crds", notCRDs}, "no CustomResourceDefinition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, _, err := runRBAC(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
			if stdout != "" {
				t.Errorf("printed a role despite the error:\n%s", stdout)
			}
		})
	}
}

// TestDeployRulesRBAC keeps deploy/base/rules-rbac.yaml what `kubecel rbac` prints for
// deploy/base/rules.yaml, so the deployed controller may do what its default rules need.
func TestDeployRulesRBAC(t *testing.T) {
	noCluster(t)
	want, err := os.ReadFile("../../deploy/base/rules-rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, stderr, err := runRBAC(t, "--rules", "../../deploy/base/rules.yaml")
	if err != nil {
		t.Fatalf("rbac: %v\n%s", err, stderr)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("deploy/base/rules-rbac.yaml is stale; regenerate it with\n  kubecel rbac --rules deploy/base/rules.yaml > deploy/base/rules-rbac.yaml\n(-file +generated):\n%s", diff)
	}
}

// TestRBACRulesPerSource: rbac loads the rules with the controller's limits and takes
// the same flags, so that rules the controller runs with --max-rules-per-source get
// their role too (its error names that flag).
func TestRBACRulesPerSource(t *testing.T) {
	noCluster(t)
	file := filepath.Join(t.TempDir(), "rules.yaml")
	second := strings.Replace(webappRule, "- name: webapp\n", "- name: webapp2\n", 1)
	two := webappRule + strings.ReplaceAll(second, "webapps", "otherapps")
	if err := os.WriteFile(file, []byte(ruleSet(two)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := runRBAC(t, "--rules", file, "--max-rules-per-source", "1")
	if want := "2 rules, over the limit of 1 per source of rules (--max-rules-per-source)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error = %v, want one containing %q", err, want)
	}
	stdout, stderr, err := runRBAC(t, "--rules", file, "--max-rules-per-source", "2")
	if err != nil {
		t.Fatalf("rbac with the limit raised: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "kind: ClusterRole") {
		t.Errorf("rbac printed no ClusterRole:\n%s", stdout)
	}
}
