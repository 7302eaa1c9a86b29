package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// The progressive rollout of a rules edit with `kubecel run` as a process, against a
// control plane of the test's own that audits every write: what survives a SIGKILL in
// the middle of a step, and (rollout_shard_test.go) what sharded replicas do together.

// rolloutRule is the rule of the process tests; its parents are rolloutGVR objects.
const rolloutRule = "web"

var rolloutGVR = schema.GroupVersionResource{Group: "plan.kubecel.dev", Version: "v1", Resource: "widgets"}

// rolloutRulesText is the rules file: one ConfigMap per widget, carrying version and
// Ready when its ok is "yes"; the widget's status says the version too. policy is the
// rule's `rollout:` block, "" for none.
func rolloutRulesText(ns, version, policy string) string {
	return fmt.Sprintf(`apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: %s
    parent:
      apiVersion: plan.kubecel.dev/v1
      resource: widgets
      namespaces: [%s]
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
          data: {version: %q, ok: "yes"}
        readyWhen: self.data.ok == "yes"
    status:
      fields:
        version: %q
%s`, rolloutRule, ns, version, version, policy)
}

// rolloutPolicy is a four-step policy whose steps must see every member's status at v2;
// the widgets labelled canary: "yes" are its canaries.
func rolloutPolicy(pause string) string {
	return fmt.Sprintf(`    rollout:
      steps: ["5%%", "25%%", "50%%", "100%%"]
      pause: %s
      progressDeadline: 5m
      healthy: 'parents.all(p, p.status.?version.orValue("") == "v2")'
      onFailure: Pause
      canaries: {selector: {matchLabels: {canary: "yes"}}}
`, pause)
}

// rolloutWorld is a process test's control plane, namespace, rules file and parents.
type rolloutWorld struct {
	t     *testing.T
	bin   string
	cp    *controlplane.ControlPlane
	kube  kubernetes.Interface
	dyn   dynamic.Interface
	ns    string
	rules string
	// parents are the widgets' names; canaries are labelled canary: "yes", which the
	// policy of rolloutPolicy selects.
	parents  []string
	canaries []string
	store    *rollout.Store
}

// newRolloutWorld starts a control plane with the widget kind, builds kubecel, writes
// the rules at v1 without a policy and creates n widgets, the named ones canaries.
func newRolloutWorld(t *testing.T, n int, canaries ...string) *rolloutWorld {
	t.Helper()
	w := &rolloutWorld{t: t, bin: buildKubecel(t), ns: "rollout-test", canaries: canaries}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.Options{AuditWrites: true, CRDs: []*apiextensionsv1.CustomResourceDefinition{
		testCRD("widgets", "Widget", apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTo(true)}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stop control plane: %v", err)
		}
	})
	w.cp, w.kube, w.dyn = cp, kubernetes.NewForConfigOrDie(cp.Config), dynamic.NewForConfigOrDie(cp.Config)
	w.store = &rollout.Store{Client: w.kube, Namespace: controlplane.InstallNamespace, Installation: contract.DefaultInstallation}
	if _, err := w.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.rules = filepath.Join(t.TempDir(), "rules.yaml")
	w.setRules(rolloutRulesText(w.ns, "v1", ""))
	for i := range n {
		name := fmt.Sprintf("w%02d", i)
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "plan.kubecel.dev/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": w.ns}, "spec": map[string]any{}}}
		if slices.Contains(canaries, name) {
			u.SetLabels(map[string]string{"canary": "yes"})
		}
		if _, err := w.dyn.Resource(rolloutGVR).Namespace(w.ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		w.parents = append(w.parents, name)
	}
	return w
}

// setRules replaces the rules file at once (a rename), as an editor or a ConfigMap
// volume does.
func (w *rolloutWorld) setRules(text string) {
	w.t.Helper()
	tmp := w.rules + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Rename(tmp, w.rules); err != nil {
		w.t.Fatal(err)
	}
}

// run starts `kubecel run` on the rules with its metrics on a port of its choosing.
func (w *rolloutWorld) run(name string, args ...string) *replica {
	w.t.Helper()
	return startRun(w.t, w.bin, name, append([]string{"--rules", w.rules, "--kubeconfig", w.cp.Kubeconfig,
		"--metrics-addr", "127.0.0.1:0", "--health-addr", "", "--workers", "4"}, args...)...)
}

// order is the order in which the rollout of the rules file's rule takes the parents.
func (w *rolloutWorld) order() []string {
	w.t.Helper()
	data, err := os.ReadFile(w.rules)
	if err != nil {
		w.t.Fatal(err)
	}
	rs, err := rules.Load(data, rules.Options{})
	if err != nil {
		w.t.Fatal(err)
	}
	ps := make([]rollout.Parent, len(w.parents))
	for i, p := range w.parents {
		ps[i] = rollout.Parent{Namespace: w.ns, Name: p, Canary: slices.Contains(w.canaries, p)}
	}
	rollout.Order(ps, rs.Rules[0].Revision)
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// versions maps each parent to the version its child carries ("" without a child).
func (w *rolloutWorld) versions() map[string]string {
	w.t.Helper()
	list, err := w.kube.CoreV1().ConfigMaps(w.ns).List(w.t.Context(), metav1.ListOptions{LabelSelector: contract.LabelRule + "=" + rolloutRule})
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]string{}
	for _, cm := range list.Items {
		out[cm.Name] = cm.Data["version"]
	}
	return out
}

// current is the rule's current stored revision (nil before the first).
func (w *rolloutWorld) current() *rollout.Revision {
	w.t.Helper()
	revs, err := w.store.List(w.t.Context(), rolloutRule)
	if err != nil {
		w.t.Fatal(err)
	}
	return rollout.Current(revs)
}

// waitParents waits until every parent's child carries the version want says for it
// ("*" for the parents not named) and every parent says so in its status, Ready and
// Synced at revision hash ("" for a revision without a policy, whose Synced condition
// names none).
func (w *rolloutWorld) waitParents(want map[string]string, hash map[string]string) {
	w.t.Helper()
	pick := func(m map[string]string, p string) string {
		if v, ok := m[p]; ok {
			return v
		}
		return m["*"]
	}
	testenv.Eventually(w.t, 3*time.Minute, func() (bool, string) {
		vs := w.versions()
		for _, p := range w.parents {
			if vs[p] != pick(want, p) {
				return false, fmt.Sprintf("parent %s: child at version %q, want %q", p, vs[p], pick(want, p))
			}
			u, err := w.dyn.Resource(rolloutGVR).Namespace(w.ns).Get(w.t.Context(), p, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			version, _, _ := unstructured.NestedString(u.Object, "status", "version")
			ready, _, msg := testenv.Condition(u, contract.ConditionReady)
			synced, _, _ := testenv.Condition(u, contract.ConditionSynced)
			at := rollout.RevisionOf(u, rolloutRule)
			if version != pick(want, p) || ready != "True" || synced != "True" || at != pick(hash, p) {
				return false, fmt.Sprintf("parent %s: status version %q, Ready %s (%s), Synced %s at revision %q; want %q, True, True at %q",
					p, version, ready, msg, synced, at, pick(want, p), pick(hash, p))
			}
		}
		return true, ""
	})
}

// servingMetrics matches the log line that says where a process serves its metrics.
var servingMetrics = regexp.MustCompile(`"Serving" endpoint="metrics" addr="([^"]+)"`)

// idle waits until a process has reconciled every parent at least once and its queues
// are empty, as its metrics say.
func (w *rolloutWorld) idle(r *replica) {
	w.t.Helper()
	w.settle(r, queueFigures{reconciles: float64(len(w.parents))})
}

// looked makes a process look at every parent again, and at the rule's rollout when
// one is under way, and waits until it has: it annotates each parent (nothing the rule
// reads), which queues the parent's reconcile and a look at a rollout under way, and
// waits until the process counted a reconcile of each (and a look at the rollout) more,
// with its queues empty. A write the process would make at rest has been made by then: a check that
// it wrote nothing has given it the chance to.
func (w *rolloutWorld) looked(r *replica, underWay bool) {
	w.t.Helper()
	before := w.figures(r)
	w.annotate()
	want := queueFigures{reconciles: before.reconciles + float64(len(w.parents)), rolloutLooks: before.rolloutLooks}
	if underWay {
		want.rolloutLooks++
	}
	w.settle(r, want)
}

// annotate sets an annotation no rule reads on every parent, and returns how many.
func (w *rolloutWorld) annotate() int {
	w.t.Helper()
	for _, p := range w.parents {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"test.kubecel.dev/looked":%q}}}`, strconv.FormatInt(time.Now().UnixNano(), 10))
		if _, err := w.dyn.Resource(rolloutGVR).Namespace(w.ns).Patch(w.t.Context(), p, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			w.t.Fatal(err)
		}
	}
	return len(w.parents)
}

// queueFigures are what a process's metrics say of its work on the rule.
type queueFigures struct {
	reconciles   float64 // kubecel_reconcile_total of the rule
	rolloutLooks float64 // workqueue_adds_total{name="rollouts"}
	busy         float64 // workqueue_depth and workqueue_unfinished_work_seconds, all queues
}

// figuresOf reads the figures of rule ("" for every rule) from a /metrics page.
func figuresOf(body, rule string) queueFigures {
	var got queueFigures
	for line := range strings.Lines(body) {
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, `kubecel_reconcile_total{`) && (rule == "" || strings.Contains(line, `rule="`+rule+`"`)):
			got.reconciles += v
		case strings.HasPrefix(line, `workqueue_adds_total{name="rollouts"}`):
			got.rolloutLooks += v
		case strings.HasPrefix(line, "workqueue_depth"), strings.HasPrefix(line, "workqueue_unfinished_work_seconds"):
			got.busy += v
		}
	}
	return got
}

// figures reads a process's metrics.
func (w *rolloutWorld) figures(r *replica) queueFigures {
	w.t.Helper()
	var got queueFigures
	testenv.Eventually(w.t, 3*time.Minute, func() (bool, string) {
		m := servingMetrics.FindStringSubmatch(readFile(r.log))
		if m == nil {
			return false, "the process has not logged where it serves its metrics"
		}
		code, body := httpGet("http://" + m[1] + "/metrics")
		if code != 200 {
			return false, fmt.Sprintf("/metrics: %d %s", code, body)
		}
		got = figuresOf(body, rolloutRule)
		return true, ""
	})
	return got
}

// settle waits until a process's figures reach at least want's counts with its queues
// empty.
func (w *rolloutWorld) settle(r *replica, want queueFigures) {
	w.t.Helper()
	testenv.Eventually(w.t, 3*time.Minute, func() (bool, string) {
		got := w.figures(r)
		return got.reconciles >= want.reconciles && got.rolloutLooks >= want.rolloutLooks && got.busy == 0,
			fmt.Sprintf("%g reconciles of rule %s, %g looks at rollouts, queues busy %g; want at least %g and %g, and 0",
				got.reconciles, rolloutRule, got.rolloutLooks, got.busy, want.reconciles, want.rolloutLooks)
	})
}

// kubecelWrites are the writes of kubecel run processes (user agent kubecel, or
// kubecel/IDENTITY with leader election or sharding) since the audit mark, as
// "verb resource[/subresource] namespace/name".
func (w *rolloutWorld) kubecelWrites(mark int) []string {
	w.t.Helper()
	var out []string
	for _, e := range auditEvents(w.t, w.cp)[mark:] {
		ua := strings.Fields(e.UserAgent + " ")[0]
		if ua != "kubecel" && !strings.HasPrefix(ua, "kubecel/") {
			continue
		}
		res := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			res += "/" + e.ObjectRef.Subresource
		}
		out = append(out, fmt.Sprintf("%s %s %s/%s", e.Verb, res, e.ObjectRef.Namespace, e.ObjectRef.Name))
	}
	return out
}

// objectWrites keeps the writes to parents, children and revisions: the objects a
// controller at rest must leave alone.
func objectWrites(writes []string) []string {
	return slices.DeleteFunc(slices.Clone(writes), func(s string) bool {
		f := strings.Fields(s)
		res, _, _ := strings.Cut(f[1], "/")
		return res != "widgets" && res != "configmaps" && res != "controllerrevisions"
	})
}

// TestRolloutProcessKilledMidStep edits the rules of a running `kubecel run` to a
// rollout whose steps pause an hour, waits until its first step moved the canary and
// was seen healthy, SIGKILLs the process and starts it again: the rollout stands at the
// same step with the same times, the canary at v2, every other parent at v1, and the new
// process writes no parent, child or revision. `kubecel rollout undo` then sends the
// canary back to v1.
func TestRolloutProcessKilledMidStep(t *testing.T) {
	w := newRolloutWorld(t, 20, "w13")
	first := w.run("first")
	w.waitParents(map[string]string{"*": "v1"}, map[string]string{"*": ""})
	if cur := w.current(); cur == nil || cur.Number != 1 || cur.Phase != rollout.Complete {
		t.Fatalf("the rule's first revision: %+v, want number 1, Complete", cur)
	}

	w.setRules(rolloutRulesText(w.ns, "v2", rolloutPolicy("1h")))
	canary := w.order()[0]
	if canary != "w13" {
		t.Fatalf("the rollout order begins with %s, want the labelled canary w13", canary)
	}
	var before *rollout.Revision
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		before = w.current()
		return before.Number == 2 && before.Phase == rollout.Progressing && before.Step == 1 && !before.HealthySince.IsZero(),
			fmt.Sprintf("revision %d is %s at step %d, healthy since %v; want revision 2 Progressing at step 1, seen healthy",
				before.Number, before.Phase, before.Step, before.HealthySince)
	})
	w.waitParents(map[string]string{canary: "v2", "*": "v1"}, map[string]string{canary: before.Hash, "*": ""})

	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.done
	killed := w.current()
	if killed.Object.ResourceVersion != before.Object.ResourceVersion {
		t.Errorf("the stored revision changed between the check and the kill: %+v, then %+v", before.State, killed.State)
	}
	mark := len(auditEvents(t, w.cp))

	second := w.run("second")
	w.idle(second)
	w.looked(second, true)
	after := w.current()
	if after.Phase != rollout.Progressing || after.Step != 1 || !after.StepStarted.Equal(before.StepStarted) || !after.HealthySince.Equal(before.HealthySince) {
		t.Errorf("after the restart: %s at step %d, started %v, healthy since %v; want Progressing at step 1, started %v, healthy since %v",
			after.Phase, after.Step, after.StepStarted, after.HealthySince, before.StepStarted, before.HealthySince)
	}
	w.waitParents(map[string]string{canary: "v2", "*": "v1"}, map[string]string{canary: before.Hash, "*": ""})
	writes := w.kubecelWrites(mark)
	if objs := objectWrites(writes); len(objs) > 0 {
		t.Errorf("the restarted process wrote %d times to parents, children or revisions, want none:\n%s", len(objs), strings.Join(objs, "\n"))
	}
	kinds := map[string]int{}
	for _, s := range writes {
		f := strings.Fields(s)
		kinds[f[0]+" "+f[1]]++
	}
	t.Logf("the restarted process's writes, by verb and resource: %v", kinds)

	// kubecel rollout undo, as a user types it: every parent back at v1.
	out, err := exec.Command(w.bin, "rollout", "undo", rolloutRule, "--kubeconfig", w.cp.Kubeconfig).CombinedOutput()
	if err != nil {
		t.Fatalf("kubecel rollout undo: %v\n%s", err, out)
	}
	t.Logf("kubecel rollout undo: %s", out)
	w.waitParents(map[string]string{"*": "v1"}, map[string]string{"*": ""})
	if cur := w.current(); cur.Number != 2 || cur.Phase != rollout.RolledBack {
		t.Errorf("after the undo: revision %d %s, want 2 RolledBack", cur.Number, cur.Phase)
	}
	// At rest after the undo: nothing more.
	w.idle(second)
	mark = len(auditEvents(t, w.cp))
	w.looked(second, false)
	if objs := objectWrites(w.kubecelWrites(mark)); len(objs) > 0 {
		t.Errorf("at rest after the undo the process wrote %v, want nothing", objs)
	}
}
