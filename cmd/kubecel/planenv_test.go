package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/engine/plan"
	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

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

// uids returns the UIDs of the ConfigMaps and Secrets in the test's namespace, by
// kind and name.
func (e *planEnv) uids() map[string]string {
	cms, err := testenv.Kube(e.t).CoreV1().ConfigMaps(e.ns).List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	secrets, err := testenv.Kube(e.t).CoreV1().Secrets(e.ns).List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for _, cm := range cms.Items {
		out["configmap/"+cm.Name] = string(cm.UID)
	}
	for _, s := range secrets.Items {
		out["secret/"+s.Name] = string(s.UID)
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
		Parent  plan.ObjectRef `json:"parent"`
		Changes []plan.Change  `json:"changes"`
		Errors  []string       `json:"errors"`
	} `json:"parents"`
}

// summary is a plan's changes per parent name, as "action child object [fields]".
func (p jsonPlan) summary(withCreateFields bool) map[string][]string {
	out := map[string][]string{}
	for _, pp := range p.Parents {
		lines := []string{}
		for _, ch := range pp.Changes {
			l := fmt.Sprintf("%s %s %s", ch.Action, ch.Child, ch.Object.Name)
			if ch.Action != plan.ActionCreate && ch.Action != plan.ActionStatus || withCreateFields {
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

// converge runs the controller until done holds and it has nothing more to do. It
// sets each rules file in turn, as when the controller reloads edited rules.
func (e *planEnv) converge(done func() (bool, string), rulesFiles ...string) {
	e.t.Helper()
	ctrl, err := engine.New(testenv.Config(e.t), engine.Options{Workers: 2, Identity: testenv.Identity(e.t)})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.t.Context())
	for _, f := range rulesFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			e.t.Fatal(err)
		}
		rs, err := rules.Load(data, rules.Options{})
		if err != nil {
			e.t.Fatal(err)
		}
		ctrl.SetRules(ctx, rs)
	}
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
				ok = ok || m["type"] == contract.ConditionSynced && m["status"] == "True" && m["observedGeneration"] == g.GetGeneration()
			}
			if !ok {
				return false, fmt.Sprintf("gadget %s not synced: %v", n, g.Object["status"])
			}
		}
		return true, ""
	}
}

// dryRun runs `kubecel run --dry-run` until it has logged a planned change for each
// object, and returns its log.
func dryRun(t *testing.T, rulesFile, kubeconfig string, objects []string) string {
	t.Helper()
	// The command logs through the logger in its context, as the root command sets it.
	var logs testenv.Buffer
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs)))
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), logger))
	cmd := newRunCommand()
	cmd.SetArgs([]string{"--rules", rulesFile, "--kubeconfig", kubeconfig, "--dry-run", "--metrics-addr", "", "--health-addr", ""})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	testenv.Eventually(t, time.Minute, func() (bool, string) {
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
