package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/internal/testenv"
)

var gadgets = schema.GroupVersionResource{Group: "plan.kubecel.dev", Version: "v1", Resource: "gadgets"}

// planRules is the rules file of the plan tests; .V2 is the edited version: the
// config child's color changes, the old child goes (and with it the last Secret child,
// so plan must find the kind by itself) and the extra child comes.
const planRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: {{.Rule}}
    parent:
      apiVersion: plan.kubecel.dev/v1
      resource: gadgets
      namespaces: [{{.NS}}]
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
          data: {size: "${string(parent.spec.size)}", color: {{if .V2}}green{{else}}blue{{end}}}
{{- if not .V2}}
      - id: old
        template:
          apiVersion: v1
          kind: Secret
          metadata: {name: "${parent.metadata.name}-old"}
          stringData: {old: "yes"}
{{- end}}
      - id: part
        template:
          apiVersion: plan.kubecel.dev/v1
          kind: Part
          metadata: {name: "${parent.metadata.name}"}
          spec: {size: "${parent.spec.size}"}
{{- if .V2}}
      - id: extra
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-extra"}
          data: {extra: "yes"}
{{- end}}
    status:
      fields:
        size: ${parent.spec.size}
`

func TestPlan(t *testing.T) {
	e := newPlanEnv(t)
	e.createGadget("g1", int64(1))
	e.createGadget("g2", int64(2))
	e.converge(e.synced("g1", "g2"), e.v1)
	writes, uids := e.writes(), e.uids()
	if uids["secret/g1-old"] == "" || uids["secret/g2-old"] == "" {
		t.Fatalf("the children to prune do not exist: %v", uids)
	}

	t.Run("converged cluster", func(t *testing.T) {
		out, code := e.plan(e.v1)
		if code != 0 {
			t.Errorf("exit code %d, want 0", code)
		}
		if want := "No changes: the cluster matches the rules (2 parents).\n"; out != want {
			t.Errorf("output:\n%s\nwant:\n%s", out, want)
		}
	})

	t.Run("edited rules", func(t *testing.T) {
		p, code := e.planJSON(e.v2)
		if code != 2 {
			t.Errorf("exit code %d, want 2", code)
		}
		want := map[string][]string{}
		for _, g := range []string{"g1", "g2"} {
			want[g] = []string{
				`update config ` + g + `; ~ data.color: "blue" -> "green"`,
				`create extra ` + g + `-extra`,
				`prune old ` + g + `-old`,
			}
		}
		if diff := cmp.Diff(want, p.summary(false)); diff != "" {
			t.Errorf("planned changes (-want +got):\n%s", diff)
		}
		create := strings.Join(p.summary(true)["g1"], "\n")
		for _, field := range []string{`+ data.extra: "yes"`, `+ metadata.labels["kubecel.dev/child"]: "extra"`} {
			if !strings.Contains(create, field) {
				t.Errorf("the create of g1-extra does not show %s:\n%s", field, create)
			}
		}

		out, code := e.plan(e.v2)
		if code != 2 {
			t.Errorf("exit code %d, want 2", code)
		}
		for _, block := range []string{
			"rule plan: Gadget.plan.kubecel.dev " + e.ns + "/g1\n" +
				"  ~ ConfigMap " + e.ns + "/g1 (child config)\n" +
				"      ~ data.color: \"blue\" -> \"green\"\n" +
				"  + ConfigMap " + e.ns + "/g1-extra (child extra)\n",
			"  - Secret " + e.ns + "/g2-old (child old)\n\n",
			"\nPlan: 2 to create, 2 to update, 2 to prune, 0 status changes, in 2 of 2 parents.\n",
		} {
			if !strings.Contains(out, block) {
				t.Errorf("the text plan lacks\n%s", block)
			}
		}
		out, code = e.plan(e.v2, "-n", "default")
		if code != 0 || out != "No changes: the cluster matches the rules (0 parents).\n" {
			t.Errorf("plan -n default: exit %d, output %q; want 0 and no parents", code, out)
		}
	})

	t.Run("yaml, rules from stdin", func(t *testing.T) {
		want, _ := e.planJSON(e.v2)
		data, err := os.ReadFile(e.v2)
		if err != nil {
			t.Fatal(err)
		}
		cmd := newPlanCommand()
		cmd.SetIn(bytes.NewReader(data))
		stdout, stderr, code := runCommand(t, cmd, "--rules", "-", "--kubeconfig", e.kubeconfig, "-o", "yaml")
		if code != 2 {
			t.Errorf("exit code %d, want 2\n%s", code, stderr)
		}
		var got jsonPlan
		if err := yaml.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("stdout is not the YAML plan: %v\n%s", err, stdout)
		}
		if diff := cmp.Diff(want.summary(true), got.summary(true)); diff != "" {
			t.Errorf("the YAML plan differs from the JSON plan (-json +yaml):\n%s", diff)
		}
	})

	t.Run("run --dry-run", func(t *testing.T) {
		// A controller started on the new rules, as opposed to one that reloads them,
		// does not watch Secrets any more and plans no prune of the old children.
		logs := dryRun(t, e.v2, e.kubeconfig, []string{
			"ConfigMap " + e.ns + "/g1-extra", "ConfigMap " + e.ns + "/g2-extra",
			"ConfigMap " + e.ns + "/g1", "ConfigMap " + e.ns + "/g2",
		})
		if !strings.Contains(logs, `~ data.color: "blue" -> "green"`) {
			t.Errorf("the dry run did not log the update's diff:\n%s", logs)
		}
	})

	if after := e.writes(); after != writes {
		t.Errorf("plan and run --dry-run sent %d write requests, want 0", after-writes)
		e.logWrites(writes)
	}
	if diff := cmp.Diff(uids, e.uids()); diff != "" {
		t.Errorf("plan or run --dry-run changed ConfigMaps or Secrets (-before +after):\n%s", diff)
	}

	t.Run("applied edit", func(t *testing.T) {
		// The controller reloads the edited rules, as it does when the file changes.
		e.converge(e.synced("g1", "g2"), e.v1, e.v2)
		if out, code := e.plan(e.v2); code != 0 {
			t.Errorf("exit code %d after the controller applied the rules, want 0:\n%s", code, out)
		}
	})

	t.Run("server rejects one parent's child", func(t *testing.T) {
		e.createGadget("g3", "big") // Part.spec.size must be an integer
		patch := []byte(`{"spec":{"size":5}}`)
		if _, err := testenv.Dynamic(t).Resource(gadgets).Namespace(e.ns).Patch(t.Context(), "g1", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		writes := e.writes()
		p, code := e.planJSON(e.v2)
		if code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
		got := p.summary(false)
		want := map[string][]string{
			"g1": {`update config g1; ~ data.size: "1" -> "5"`, `update part g1; ~ spec.size: 1 -> 5`, "status  g1"},
			"g2": {},
			"g3": {"create config g3", "create extra g3-extra", "status  g3"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("planned changes (-want +got):\n%s", diff)
		}
		for _, pp := range p.Parents {
			switch {
			case pp.Parent.Name == "g3":
				if len(pp.Errors) != 1 || !strings.Contains(pp.Errors[0], `child "part"`) || !strings.Contains(pp.Errors[0], "spec.size") {
					t.Errorf("g3 errors = %q, want the server's rejection of spec.size of child part", pp.Errors)
				}
			case len(pp.Errors) > 0:
				t.Errorf("%s errors = %q, want none", pp.Parent.Name, pp.Errors)
			}
		}
		out, _ := e.plan(e.v2)
		if !strings.Contains(out, "  ! rule \"plan\" child \"part\": Part.plan.kubecel.dev "+e.ns+"/g3: apply: ") ||
			!strings.HasSuffix(out, "; 1 error in 1 parent.\n") {
			t.Errorf("the text plan does not show g3's error and count it")
		}
		if after := e.writes(); after != writes {
			t.Errorf("plan sent %d write requests, want 0", after-writes)
		}
	})
}

// TestPlanConnectionErrors: a plan that cannot talk to the cluster says why at once,
// wherever its kubeconfig comes from, and prints nothing on stdout.
func TestPlanConnectionErrors(t *testing.T) {
	e := newPlanEnv(t)
	cfg := testenv.Config(t)
	closed := testenv.ClosedPortKubeconfig(t)
	wrongToken := clientcmdapi.NewConfig()
	wrongToken.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	wrongToken.AuthInfos["stranger"] = &clientcmdapi.AuthInfo{Token: "not-a-token"}
	wrongToken.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "stranger"}
	wrongToken.CurrentContext = "test"
	absent := filepath.Join(t.TempDir(), "absent")
	tests := []struct {
		name string
		env  string // $KUBECONFIG
		args []string
		want string
	}{
		{name: "closed port, --kubeconfig", env: absent, args: []string{"--kubeconfig", closed},
			want: `Error: cannot reach the API server at https://127.0.0.1:1: Get "https://127.0.0.1:1/version?timeout=15s": dial tcp 127.0.0.1:1: connect: connection refused`},
		{name: "closed port, $KUBECONFIG", env: closed,
			want: `Error: cannot reach the API server at https://127.0.0.1:1: Get "https://127.0.0.1:1/version?timeout=15s": dial tcp 127.0.0.1:1: connect: connection refused`},
		{name: "refused credentials", env: absent, args: []string{"--kubeconfig", testenv.WriteKubeconfig(t, wrongToken)},
			want: "Error: the API server at " + cfg.Host + ": the server has asked for the client to provide credentials"},
		{name: "no kubeconfig", env: absent,
			want: "Error: no kubeconfig: looked in $KUBECONFIG (" + absent + ") and the in-cluster service account; pass --kubeconfig FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tt.env)
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			stdout, stderr, code := runCommand(t, newPlanCommand(), append([]string{"--rules", e.v1}, tt.args...)...)
			if code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			if stdout != "" {
				t.Errorf("printed on stdout:\n%s", stdout)
			}
			if strings.TrimSpace(stderr) != tt.want {
				t.Errorf("stderr:\n%s\nwant:\n%s", stderr, tt.want)
			}
		})
	}
}
