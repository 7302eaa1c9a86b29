package engine_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

// rolloutRules is a rule whose one child, a ConfigMap, carries version and is Ready when
// ok is "yes"; policy is its `rollout:` block ("" for none).
func rolloutRules(version, ok, policy string) string {
	return widgetRuleHead + fmt.Sprintf(`      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
          data: {version: %q, ok: %q}
        readyWhen: self.data.ok == "yes"
    status:
      fields:
        version: %q
%s`, version, ok, version, policy)
}

// fourSteps is a rollout policy of four steps over 20 parents: 1, 5, 10 and 20 of them.
const fourSteps = `    rollout:
      steps: ["5%%", "25%%", "50%%", "100%%"]
      pause: %s
      progressDeadline: %s
      onFailure: %s
`

// rolloutFixture runs a controller that keeps revisions in the test's namespace, and
// converges 20 parents at version v1.
type rolloutFixture struct {
	*fixture
	parents []string
	store   *rollout.Store
}

func startRollout(t *testing.T, first string) *rolloutFixture {
	t.Helper()
	rf := startRolloutHeld(t, first, false)
	// The first revision is stored once the controller is idle.
	rf.waitPhase(rollout.Complete)
	return rf
}

// startRolloutHeld is startRollout, but with hold the controller stores no first
// revision by itself (engine.HoldFirstRevisions), and it does not wait for one.
func startRolloutHeld(t *testing.T, first string, hold bool) *rolloutFixture {
	t.Helper()
	ns := testenv.Namespace(t)
	// The revisions live in the test's own namespace.
	f := &fixture{t: t, ns: ns, rule: fmt.Sprintf("r%04x", rand.IntN(1<<16)), rulesTemplate: first,
		opts: engine.Options{Workers: 4, RevisionNamespace: ns}}
	if hold {
		engine.HoldFirstRevisions(&f.opts)
	}
	f.run()
	rf := &rolloutFixture{fixture: f, store: &rollout.Store{Client: testenv.Kube(t), Namespace: f.ns, Installation: f.opts.Identity.Name(), Signer: f.opts.Identity}}
	for i := range 20 {
		name := fmt.Sprintf("w%02d", i)
		rf.parents = append(rf.parents, name)
		f.create(widgets, widget(f.ns, name, map[string]any{}))
	}
	rf.waitVersions(map[string]string{"*": "v1"})
	f.waitIdle()
	return rf
}

// version is the version a parent's child carries ("" when it has none).
func (rf *rolloutFixture) version(parent string) string {
	cm, err := testenv.Kube(rf.t).CoreV1().ConfigMaps(rf.ns).Get(rf.t.Context(), parent, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return cm.Data["version"]
}

// versions maps each parent to its child's version.
func (rf *rolloutFixture) versions() map[string]string {
	out := map[string]string{}
	for _, p := range rf.parents {
		out[p] = rf.version(p)
	}
	return out
}

// waitVersions waits until every parent's child has the version want says for it ("*"
// for every parent not named).
func (rf *rolloutFixture) waitVersions(want map[string]string) {
	rf.t.Helper()
	rf.eventually(func() (bool, string) {
		for _, p := range rf.parents {
			w, ok := want[p]
			if !ok {
				w = want["*"]
			}
			if got := rf.version(p); got != w {
				return false, fmt.Sprintf("parent %s: child at version %q, want %q", p, got, w)
			}
		}
		return true, ""
	})
}

// current is the rule's current stored revision.
func (rf *rolloutFixture) current() *rollout.Revision {
	rf.t.Helper()
	revs, err := rf.store.List(rf.t.Context(), rf.rule)
	if err != nil {
		rf.t.Fatal(err)
	}
	return rollout.Current(revs)
}

// waitPhase waits until the current revision's rollout is in phase.
func (rf *rolloutFixture) waitPhase(phase rollout.Phase) *rollout.Revision {
	rf.t.Helper()
	var cur *rollout.Revision
	rf.eventually(func() (bool, string) {
		cur = rf.current()
		if cur == nil {
			return false, "no revision stored"
		}
		return cur.Phase == phase, fmt.Sprintf("revision %d is %s at step %d (%s), want %s", cur.Number, cur.Phase, cur.Step, cur.Message, phase)
	})
	return cur
}

// order is the order in which the rollout of the fixture's rules takes its parents.
func (rf *rolloutFixture) order() []string { return rf.orderFor(rf.rulesTemplate) }

// orderFor is the order in which the rollout of the rules of text takes the parents.
func (rf *rolloutFixture) orderFor(text string) []string {
	revision := rf.loadRules(text).Rules[0].Revision
	ps := make([]rollout.Parent, len(rf.parents))
	for i, p := range rf.parents {
		ps[i] = rollout.Parent{Namespace: rf.ns, Name: p}
	}
	rollout.Order(ps, revision)
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// setRules replaces the running rules, also for a restart.
func (rf *rolloutFixture) setRules(text string) {
	rf.rulesTemplate = text
	rf.ctrl.SetRules(rf.t.Context(), rf.loadRules(text))
}

// childWrites are the controller's writes to ConfigMaps and parents of the namespace,
// by object name.
func (rf *rolloutFixture) childWrites() map[string]int {
	rf.t.Helper()
	events, err := testenv.ControlPlane(rf.t).AuditEvents()
	if err != nil {
		rf.t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range events {
		if rf.controllerWrites(e) && !strings.Contains(e.RequestURI, "dryRun=All") && (e.ObjectRef.Resource == "configmaps" || e.ObjectRef.Resource == "widgets") {
			out[e.ObjectRef.Resource+"/"+e.ObjectRef.Name]++
		}
	}
	return out
}

// restartWrites restarts the controller, reconciles every parent once it runs, and
// returns the writes it made meanwhile (childWrites).
func (rf *rolloutFixture) restartWrites() map[string]int {
	rf.t.Helper()
	atRest := rf.childWrites()
	rf.restart()
	rf.ctrl.EnqueueAll()
	rf.waitIdle()
	return writesSince(atRest, rf.childWrites())
}

// writesSince are the writes of childWrites made after before.
func writesSince(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range after {
		if d := n - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// writtenParents are the parents whose child or status a set of writes touched.
func writtenParents(w map[string]int) []string {
	var out []string
	for k := range w {
		_, name, _ := strings.Cut(k, "/")
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func TestRolloutGoodEditTakesEveryStep(t *testing.T) {
	rf := startRollout(t, rolloutRules("v1", "yes", ""))
	first := rf.current()
	if first == nil || first.Phase != rollout.Complete || first.Number != 1 {
		t.Fatalf("first revision: %+v, want number 1, Complete", first)
	}
	before := rf.childWrites()
	rf.setRules(rolloutRules("v2", "yes", fmt.Sprintf(fourSteps, "1s", "5m", "Pause")))
	order := rf.order()
	counts := []int{1, 5, 10, 20}
	// At every poll, the parents at v2 are the first members of the order for the step
	// the stored state says (or of the step before, while the new step's members move).
	rf.eventually(func() (bool, string) {
		// The children first, then the state: the state read can only be ahead of them.
		vs := rf.versions()
		cur := rf.current()
		var at []string
		for _, p := range order {
			if vs[p] == "v2" {
				at = append(at, p)
			}
		}
		if cur.Phase == rollout.Progressing {
			limit := counts[cur.Step-1]
			if slices.ContainsFunc(at, func(p string) bool { return !slices.Contains(order[:limit], p) }) {
				t.Fatalf("step %d: parents at v2 %v, want at most the first %d of %v", cur.Step, at, limit, order)
			}
		}
		return cur.Phase == rollout.Complete && len(at) == 20, fmt.Sprintf("revision %d %s step %d, %d parents at v2", cur.Number, cur.Phase, cur.Step, len(at))
	})
	// Every step was taken, one after the other: the controller recorded each on the
	// revision (a poll may miss a step that lasts a second).
	cur := rf.current()
	list, err := testenv.Kube(t).CoreV1().Events(rf.ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + cur.Object.Name})
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, e := range list.Items {
		if e.Reason == "RolloutStep" || e.Reason == "RolloutComplete" {
			steps = append(steps, e.Message)
		}
	}
	slices.Sort(steps)
	want := []string{fmt.Sprintf("every parent is at revision %d (%s)", cur.Number, cur.Hash), "step 2 of 4 (25%) begins", "step 3 of 4 (50%) begins", "step 4 of 4 (100%) begins"}
	if !slices.Equal(steps, want) {
		t.Errorf("the revision's step Events: %q, want %q", steps, want)
	}
	rf.waitIdle()
	w := writesSince(before, rf.childWrites())
	// Each child once, each parent twice: its status, and the revision it is at
	// (contract.RevisionAnnotation), which an edit without a rollout does not record.
	for _, p := range rf.parents {
		if w["configmaps/"+p] != 1 || w["widgets/"+p] != 2 {
			t.Errorf("parent %s: %d child writes and %d parent writes, want 1 and 2", p, w["configmaps/"+p], w["widgets/"+p])
		}
	}
	for _, p := range rf.parents {
		obj, err := rf.get(widgets, rf.ns, p)
		if err != nil {
			t.Fatal(err)
		}
		if got := rollout.RevisionOf(obj, rf.rule); got != cur.Hash {
			t.Errorf("parent %s at revision %q, want %q", p, got, cur.Hash)
		}
	}
	// At rest after the rollout: no write.
	atRest := rf.childWrites()
	rf.ctrl.EnqueueAll()
	rf.waitIdle()
	if w := writesSince(atRest, rf.childWrites()); len(w) > 0 {
		t.Errorf("a resync after the rollout wrote %v, want nothing", w)
	}
}

// badEdit sends a rules edit whose children never become Ready and waits until its
// first step fails; it returns the writes the edit made.
func (rf *rolloutFixture) badEdit(onFailure string, phase rollout.Phase) (map[string]int, *rollout.Revision) {
	rf.t.Helper()
	before := rf.childWrites()
	rf.setRules(rolloutRules("v2", "no", fmt.Sprintf(fourSteps, "0s", "3s", onFailure)))
	cur := rf.waitPhase(phase)
	rf.waitIdle()
	return writesSince(before, rf.childWrites()), cur
}

func TestRolloutBadEditPausesInFirstStep(t *testing.T) {
	rf := startRollout(t, rolloutRules("v1", "yes", ""))
	v1 := rf.current()
	w, cur := rf.badEdit("Pause", rollout.Paused)
	canary := rf.order()[0]
	if got := writtenParents(w); !slices.Equal(got, []string{canary}) {
		t.Fatalf("the failed first step wrote to parents %v (%v), want only %s", got, w, canary)
	}
	if cur.Step != 1 || !strings.Contains(cur.Message, rf.ns+"/"+canary+": Ready is False") {
		t.Errorf("paused at step %d with message %q, want step 1 naming %s/%s as not Ready", cur.Step, cur.Message, rf.ns, canary)
	}
	rf.waitVersions(map[string]string{canary: "v2", "*": "v1"})

	// kubecel rollout undo: the changed parent goes back to the previous revision's
	// children, exactly.
	state, err := rollout.Undo(cur, []*rollout.Revision{v1, cur})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rf.store.Update(t.Context(), cur, cur.Number, state); err != nil {
		t.Fatal(err)
	}
	rf.waitVersions(map[string]string{"*": "v1"})
	rf.eventually(func() (bool, string) {
		obj, err := rf.get(widgets, rf.ns, canary)
		if err != nil {
			return false, err.Error()
		}
		// Revision 1 has no rollout policy: its Synced condition names no revision.
		synced, _, msg := testenv.Condition(obj, contract.ConditionSynced)
		return synced == "True" && rollout.RevisionOf(obj, rf.rule) == "", fmt.Sprintf("the canary's Synced condition is %s %q, want True at revision 1 (%s)", synced, msg, v1.Hash)
	})
	assertSameChild(t, rf, canary, rf.parents[len(rf.parents)-1])
}

func TestRolloutBadEditRollsBackByItself(t *testing.T) {
	rf := startRollout(t, rolloutRules("v1", "yes", ""))
	w, cur := rf.badEdit("Rollback", rollout.RolledBack)
	canary := rf.order()[0]
	if got := writtenParents(w); !slices.Equal(got, []string{canary}) {
		t.Fatalf("the failed first step wrote to parents %v (%v), want only %s", got, w, canary)
	}
	if !strings.Contains(cur.Message, "not healthy within 3s") {
		t.Errorf("rolled back with message %q", cur.Message)
	}
	rf.waitVersions(map[string]string{"*": "v1"})
	rf.waitIdle()
	assertSameChild(t, rf, canary, rf.parents[len(rf.parents)-1])
	// Held at the previous revision until the text changes: a restart keeps it.
	if w := rf.restartWrites(); len(w) > 0 {
		t.Errorf("a restart after the rollback wrote %v, want nothing", w)
	}
}

// assertSameChild checks that two parents' children have the same data, labels aside
// from those naming the parent: the rolled back parent has the previous revision's
// child exactly.
func assertSameChild(t *testing.T, rf *rolloutFixture, a, b string) {
	t.Helper()
	get := func(name string) map[string]string {
		cm, err := testenv.Kube(t).CoreV1().ConfigMaps(rf.ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data
	}
	if da, db := get(a), get(b); fmt.Sprint(da) != fmt.Sprint(db) {
		t.Errorf("child of %s has data %v, child of %s (never changed) %v", a, da, b, db)
	}
}
