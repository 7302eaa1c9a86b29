package engine_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

// A new parent is served by some revision of its rule whatever step a rollout is at
// (issue 44): a parent that the revision rolled from does not select is not left
// without children and status until a step takes it.

// inNamespaces makes rules of rolloutRules select the Widgets of these namespaces.
func inNamespaces(text string, namespaces ...string) string {
	const one = "namespaces: [{{.NS}}]"
	if !strings.Contains(text, one) {
		panic("the rollout rules no longer say " + one)
	}
	return strings.Replace(text, one, "namespaces: ["+strings.Join(namespaces, ", ")+"]", 1)
}

// longStep is a policy whose steps wait an hour once healthy: a test sees a step's pause.
var longStep = fmt.Sprintf(fourSteps, "1h", "10m", "Pause")

// startTeams runs a controller that keeps revisions in a namespace of its own, with the
// rules of text, read from origin ("" for a file), and creates n parents in ns.
func startTeams(t *testing.T, ns, origin, text string, parents ...string) *rolloutFixture {
	t.Helper()
	f := &fixture{t: t, ns: ns, rule: fmt.Sprintf("r%04x", rand.IntN(1<<16)), origin: origin, rulesTemplate: text,
		opts: engine.Options{Workers: 4, RevisionNamespace: ns}}
	f.run()
	rf := &rolloutFixture{fixture: f, store: &rollout.Store{Client: testenv.Kube(t), Namespace: ns, Installation: f.opts.Identity.Name(), Signer: f.opts.Identity}}
	for _, p := range parents {
		f.create(widgets, widget(ns, p, map[string]any{}))
	}
	return rf
}

// waitServed waits until each parent of ns has its child at version, and its status
// shows that version, Ready and Synced for its generation.
func (rf *rolloutFixture) waitServed(ns, version string, parents ...string) {
	rf.t.Helper()
	for _, p := range parents {
		rf.waitFor(widgets, ns, p, func(o *unstructured.Unstructured) (bool, string) {
			cm, err := testenv.Kube(rf.t).CoreV1().ConfigMaps(ns).Get(rf.t.Context(), p, metav1.GetOptions{})
			if err != nil {
				return false, fmt.Sprintf("parent %s/%s has no child: %v", ns, p, err)
			}
			if cm.Data["version"] != version {
				return false, fmt.Sprintf("parent %s/%s: child at version %q, want %q", ns, p, cm.Data["version"], version)
			}
			ready, _, _ := testenv.Condition(o, contract.ConditionReady)
			synced, _, msg := testenv.Condition(o, contract.ConditionSynced)
			gen, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
			if got := nestedString(o, "status", "version"); got != version || ready != "True" || synced != "True" || gen != o.GetGeneration() {
				return false, fmt.Sprintf("parent %s/%s: status version %q, Ready %s, Synced %s (%s), observedGeneration %d of %d", ns, p, got, ready, synced, msg, gen, o.GetGeneration())
			}
			return true, ""
		})
	}
}

// TestRolloutNameTakenByAnotherSource: team a's rule, with a rollout policy, read from
// team a's ConfigMap; that ConfigMap goes, and team b's, which uses the same rule name
// for its own namespace, loads. Team b's rule has no revision of its own to roll from:
// its parents, created after, are all served at once, and team a's parents are left as
// they were. (Before, team b's rule rolled out from team a's text, compiled as team b's:
// its parents outside the first step got no child and no status for the step's pause.)
func TestRolloutNameTakenByAnotherSource(t *testing.T) {
	ns := testenv.Namespace(t)
	nsB := ns + "-b"
	labelledNamespace(t, nsB, nil)
	teamA := []string{"a0", "a1", "a2", "a3"}
	rf := startTeams(t, ns, "configmap rules/team-a", rolloutRules("a", "yes", longStep), teamA...)
	rf.waitServed(ns, "a", teamA...)
	rf.waitIdle()
	before := rf.childWrites()

	rf.origin = "configmap rules/team-b"
	rf.setRules(inNamespaces(rolloutRules("b", "yes", longStep), nsB))
	var teamB []string
	for i := range 20 {
		teamB = append(teamB, fmt.Sprintf("b%02d", i))
		rf.create(widgets, widget(nsB, teamB[i], map[string]any{}))
	}
	rf.waitServed(nsB, "b", teamB...)
	cur := rf.current()
	if cur.Phase != rollout.Complete || cur.From != "" {
		t.Errorf("team b's revision %d (%s): %s from %q; want Complete at once, from nothing (team a's revisions are not its own)", cur.Number, cur.Hash, cur.Phase, cur.From)
	}
	rf.waitIdle()
	if w := writesSince(before, rf.childWrites()); len(w) > 0 {
		t.Errorf("team a's parents and children were written after team b's rule took the name: %v", w)
	}
	for _, p := range teamA {
		if v := rf.version(p); v != "a" {
			t.Errorf("team a's parent %s: child at version %q, want it left at %q", p, v, "a")
		}
	}
}

// TestRolloutNewParentOutsideTheStableSelection: an edit under a rollout policy widens
// the rule to a second namespace. While its first step pauses, the parents created in
// that namespace, which the revision rolled from does not select, are served by the new
// revision; the first namespace's parents stay where the step left them. (Before, they
// got no child and no status until a step took them.)
func TestRolloutNewParentOutsideTheStableSelection(t *testing.T) {
	ns := testenv.Namespace(t)
	nsB := ns + "-b"
	labelledNamespace(t, nsB, nil)
	first := []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"}
	rf := startTeams(t, ns, "", rolloutRules("v1", "yes", ""), first...)
	rf.waitServed(ns, "v1", first...)
	rf.waitIdle()

	rf.setRules(inNamespaces(rolloutRules("v2", "yes", longStep), "{{.NS}}", nsB))
	rf.eventually(func() (bool, string) {
		cur := rf.current()
		// The first step is healthy: its hour's pause has begun.
		return cur.Number == 2 && cur.Phase == rollout.Progressing && !cur.HealthySince.IsZero(), fmt.Sprintf("revision %d %s at step %d, healthy since %v", cur.Number, cur.Phase, cur.Step, cur.HealthySince)
	})
	var added []string
	for i := range 5 {
		added = append(added, fmt.Sprintf("q%d", i))
		rf.create(widgets, widget(nsB, added[i], map[string]any{}))
	}
	rf.waitServed(nsB, "v2", added...)
	rf.waitIdle()
	if cur := rf.current(); cur.Phase != rollout.Progressing || cur.Step != 1 {
		t.Errorf("revision %d: %s at step %d, want Progressing at step 1 (its pause is an hour)", cur.Number, cur.Phase, cur.Step)
	}
	moved := 0
	for _, p := range first {
		if rf.version(p) == "v2" {
			moved++
		}
	}
	if moved > 1 {
		t.Errorf("%d of the first namespace's parents at v2 during the first step; want at most the one it holds", moved)
	}
}
