package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

var gadgets = schema.GroupVersionResource{Group: "plan.kubecel.dev", Version: "v1", Resource: "gadgets"}

// planRules is the rules file of the plan tests; .V2 is the edited version: the
// config child's color changes, the old child goes and the extra child comes.
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
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-old"}
          data: {old: "yes"}
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

// planEnv is one plan test's namespace, rules files and kubeconfig.
type planEnv struct {
	t          *testing.T
	ns         string
	v1, v2     string
	kubeconfig string
}

func newPlanEnv(t *testing.T) *planEnv {
	e := &planEnv{t: t, ns: testenv.Namespace(t), kubeconfig: testenv.ControlPlane(t).Kubeconfig}
	dir := t.TempDir()
	for _, v := range []struct {
		file *string
		v2   bool
	}{{&e.v1, false}, {&e.v2, true}} {
		var b bytes.Buffer
		data := map[string]any{"Rule": "plan", "NS": e.ns, "V2": v.v2}
		if err := template.Must(template.New("").Parse(planRules)).Execute(&b, data); err != nil {
			t.Fatal(err)
		}
		*v.file = filepath.Join(dir, fmt.Sprintf("rules-v2-%v.yaml", v.v2))
		if err := os.WriteFile(*v.file, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *planEnv) createGadget(name string, size any) {
	e.t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "plan.kubecel.dev/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": name, "namespace": e.ns}, "spec": map[string]any{"size": size},
	}}
	if _, err := testenv.Dynamic(e.t).Resource(gadgets).Namespace(e.ns).Create(e.t.Context(), obj, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// writes counts the write requests in the test's namespace, and any write from plan
// (access reviews, which the controller may send to check its permissions, are
// questions, not writes). Deletes are not counted: a delete carries dryRun in its body,
// which the audit log does not show, so tests check instead that the objects a dry
// run would prune still exist (see uids).
func (e *planEnv) writes() int { return testenv.Writes(e.t, e.counted) }

func (e *planEnv) counted(a controlplane.AuditEvent) bool {
	if a.Verb == "delete" {
		return false
	}
	return a.ObjectRef.Namespace == e.ns || strings.HasPrefix(a.UserAgent, "kubecel-plan") && !strings.HasSuffix(a.ObjectRef.Resource, "reviews")
}

// uids returns the UIDs of the ConfigMaps in the test's namespace, by name.
func (e *planEnv) uids() map[string]string {
	list, err := testenv.Kube(e.t).CoreV1().ConfigMaps(e.ns).List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for _, cm := range list.Items {
		out[cm.Name] = string(cm.UID)
	}
	return out
}

// logWrites logs the write requests counted by writes after the first skip.
func (e *planEnv) logWrites(skip int) {
	events, err := testenv.ControlPlane(e.t).AuditEvents()
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, a := range events {
		if strings.Contains(a.RequestURI, "dryRun=All") || !e.counted(a) {
			continue
		}
		if n++; n > skip {
			e.t.Logf("write: %s %s (%s)", a.Verb, a.RequestURI, a.UserAgent)
		}
	}
}

// plan runs `kubecel plan` and returns its output and exit code.
func (e *planEnv) plan(rulesFile string, args ...string) (string, int) {
	e.t.Helper()
	stdout, stderr, code := runCommand(e.t, newPlanCommand(), append([]string{"--rules", rulesFile, "--kubeconfig", e.kubeconfig}, args...)...)
	e.t.Logf("kubecel plan %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
	return stdout, code
}

// planJSON runs `kubecel plan -o json` and decodes it.
func (e *planEnv) planJSON(rulesFile string) (jsonPlan, int) {
	e.t.Helper()
	out, code := e.plan(rulesFile, "-o", "json")
	var p jsonPlan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		e.t.Fatalf("decode plan: %v\n%s", err, out)
	}
	return p, code
}

type jsonPlan struct {
	Parents []struct {
		Parent  engine.ObjectRef `json:"parent"`
		Changes []engine.Change  `json:"changes"`
		Errors  []string         `json:"errors"`
	} `json:"parents"`
}

// summary is a plan's changes per parent name, as "action child object [fields]".
func (p jsonPlan) summary(withCreateFields bool) map[string][]string {
	out := map[string][]string{}
	for _, pp := range p.Parents {
		lines := []string{}
		for _, ch := range pp.Changes {
			l := fmt.Sprintf("%s %s %s", ch.Action, ch.Child, ch.Object.Name)
			if ch.Action != engine.ActionCreate && ch.Action != engine.ActionStatus || withCreateFields {
				for _, f := range ch.Fields {
					l += "; " + f.String()
				}
			}
			lines = append(lines, l)
		}
		out[pp.Parent.Name] = lines
	}
	return out
}

// converge runs the controller with a rules file until it has nothing more to do.
func (e *planEnv) converge(rulesFile string, done func() (bool, string)) {
	e.t.Helper()
	data, err := os.ReadFile(rulesFile)
	if err != nil {
		e.t.Fatal(err)
	}
	rs, err := rules.Load(data, rules.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	ctrl, err := engine.New(testenv.Config(e.t), engine.Options{Workers: 2})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.t.Context())
	ctrl.SetRules(ctx, rs)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = ctrl.Run(ctx)
	}()
	defer func() {
		cancel()
		<-stopped
	}()
	idle := 0
	testenv.Eventually(e.t, time.Minute, func() (bool, string) {
		if ok, msg := done(); !ok {
			idle = 0
			return false, msg
		}
		if ctrl.Idle() {
			idle++
		} else {
			idle = 0
		}
		return idle >= 10, "controller busy"
	})
}

// synced reports whether every named gadget has Synced=True for its generation.
func (e *planEnv) synced(names ...string) func() (bool, string) {
	return func() (bool, string) {
		for _, n := range names {
			g, err := testenv.Dynamic(e.t).Resource(gadgets).Namespace(e.ns).Get(e.t.Context(), n, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			conds, _, _ := unstructured.NestedSlice(g.Object, "status", "conditions")
			ok := false
			for _, c := range conds {
				m, _ := c.(map[string]any)
				ok = ok || m["type"] == engine.ConditionSynced && m["status"] == "True" && m["observedGeneration"] == g.GetGeneration()
			}
			if !ok {
				return false, fmt.Sprintf("gadget %s not synced: %v", n, g.Object["status"])
			}
		}
		return true, ""
	}
}

func TestPlan(t *testing.T) {
	e := newPlanEnv(t)
	e.createGadget("g1", int64(1))
	e.createGadget("g2", int64(2))
	e.converge(e.v1, e.synced("g1", "g2"))
	writes, uids := e.writes(), e.uids()
	if uids["g1-old"] == "" || uids["g2-old"] == "" {
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
			"  - ConfigMap " + e.ns + "/g2-old (child old)\n\n",
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

	t.Run("run --dry-run", func(t *testing.T) {
		logs := dryRun(t, e.v2, e.kubeconfig, []string{
			"ConfigMap " + e.ns + "/g1-extra", "ConfigMap " + e.ns + "/g2-extra",
			"ConfigMap " + e.ns + "/g1-old", "ConfigMap " + e.ns + "/g2-old",
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
		t.Errorf("plan or run --dry-run changed ConfigMaps (-before +after):\n%s", diff)
	}

	t.Run("applied edit", func(t *testing.T) {
		e.converge(e.v2, e.synced("g1", "g2"))
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

// dryRun runs `kubecel run --dry-run` until it has logged a planned change for each
// object, and returns its log.
func dryRun(t *testing.T, rulesFile, kubeconfig string, objects []string) string {
	t.Helper()
	var logs lockedBuffer
	klog.LogToStderr(false)
	klog.SetOutput(&logs)
	defer func() {
		klog.Flush()
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	}()
	ctx, cancel := context.WithCancel(t.Context())
	cmd := newRunCommand()
	cmd.SetArgs([]string{"--rules", rulesFile, "--kubeconfig", kubeconfig, "--dry-run", "--metrics-addr", "", "--health-addr", ""})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		klog.Flush()
		got := logs.String()
		for _, o := range objects {
			if !strings.Contains(got, `"Planned change"`) || !strings.Contains(got, `object="`+o+`"`) {
				return false, "no planned change logged for " + o + ":\n" + got
			}
		}
		return true, ""
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run --dry-run: %v", err)
	}
	return logs.String()
}

// lockedBuffer is a bytes.Buffer that klog writes while the test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
