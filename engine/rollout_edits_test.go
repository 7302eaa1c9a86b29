package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/internal/testenv"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// undo runs what `kubecel rollout undo` does on the rule's current revision.
func (rf *rolloutFixture) undo() {
	rf.t.Helper()
	revs, err := rf.store.List(rf.t.Context(), rf.rule)
	if err != nil {
		rf.t.Fatal(err)
	}
	cur := rollout.Current(revs)
	state, err := rollout.Undo(cur, revs)
	if err != nil {
		rf.t.Fatal(err)
	}
	if _, err := rf.store.Update(rf.t.Context(), cur, cur.Number, state); err != nil {
		rf.t.Fatal(err)
	}
}

func TestRolloutUndoOfAnEditWithoutPolicy(t *testing.T) {
	rf := startRollout(t, rolloutRules("v1", "yes", ""))
	rf.setRules(rolloutRules("v2", "yes", ""))
	rf.waitVersions(map[string]string{"*": "v2"})
	if cur := rf.current(); cur.Number != 2 || cur.Phase != rollout.Complete {
		t.Fatalf("an edit without a policy stored revision %d %s, want 2 Complete", cur.Number, cur.Phase)
	}
	rf.undo()
	rf.waitVersions(map[string]string{"*": "v1"})
	// Held there: a restart with the same rules keeps every parent at v1.
	rf.waitIdle()
	if w := rf.restartWrites(); len(w) > 0 {
		t.Errorf("a restart after the undo wrote %v, want nothing", w)
	}
	// A new text rolls forward again.
	rf.setRules(rolloutRules("v3", "yes", ""))
	rf.waitVersions(map[string]string{"*": "v3"})
}

// longPause is a policy whose steps wait an hour once healthy: the rollout stays in its
// first step.
var longPause = fmt.Sprintf(fourSteps, "1h", "5m", "Pause")

func TestRolloutResumesItsStepAfterARestart(t *testing.T) {
	rf := startRollout(t, rolloutRules("v1", "yes", ""))
	rf.setRules(rolloutRules("v2", "yes", longPause))
	canary := rf.order()[0]
	rf.waitVersions(map[string]string{canary: "v2", "*": "v1"})
	var cur *rollout.Revision
	rf.eventually(func() (bool, string) {
		cur = rf.current()
		return !cur.HealthySince.IsZero(), fmt.Sprintf("step %d not seen healthy yet", cur.Step)
	})
	rf.waitIdle()
	if w := rf.restartWrites(); len(w) > 0 {
		t.Errorf("a restart in the middle of step 1 wrote %v, want nothing", w)
	}
	after := rf.current()
	if after.Step != 1 || after.Phase != rollout.Progressing || !after.HealthySince.Equal(cur.HealthySince) {
		t.Errorf("after the restart: %s step %d healthy since %v, want Progressing step 1 healthy since %v", after.Phase, after.Step, after.HealthySince, cur.HealthySince)
	}
	rf.waitVersions(map[string]string{canary: "v2", "*": "v1"})
}

func TestRolloutEditDuringARollout(t *testing.T) {
	rf := startRollout(t, rolloutRules("v1", "yes", ""))
	rf.setRules(rolloutRules("v2", "yes", fmt.Sprintf(fourSteps, "1s", "5m", "Pause")))
	// Wait for step 2 (5 parents at v2), then edit again.
	rf.eventually(func() (bool, string) {
		n := 0
		for _, v := range rf.versions() {
			if v == "v2" {
				n++
			}
		}
		return n >= 5, fmt.Sprintf("%d parents at v2", n)
	})
	v2 := rf.current()
	rf.setRules(rolloutRules("v3", "yes", longPause))
	// The new rollout starts again from the first step and from revision 1: its canary
	// (the first parent in revision 3's order) moves to v3, every other parent goes back
	// to v1.
	rf.waitVersions(map[string]string{rf.order()[0]: "v3", "*": "v1"})
	revs, err := rf.store.List(t.Context(), rf.rule)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]rollout.Phase{}
	for _, r := range revs {
		got[r.Number] = r.Phase
	}
	want := map[int64]rollout.Phase{1: rollout.Complete, v2.Number: rollout.Superseded, v2.Number + 1: rollout.Progressing}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("revisions by number: %v, want %v", got, want)
	}
	if cur := rf.current(); cur.From != revs[0].Hash || cur.Step != 1 {
		t.Errorf("the new rollout is at step %d from %s, want step 1 from revision 1 (%s)", cur.Step, cur.From, revs[0].Hash)
	}
}

func TestRolloutRuleRemovedDuringARollout(t *testing.T) {
	rf := startRollout(t, rolloutRules("v1", "yes", ""))
	withRollout := rolloutRules("v2", "yes", longPause)
	rf.setRules(withRollout)
	canary := rf.order()[0]
	rf.waitVersions(map[string]string{canary: "v2", "*": "v1"})
	rf.waitIdle()
	// Removing the rule stops it, as any removal does: its children stay as they are,
	// its revisions stay in the cluster.
	other := widgetRuleHead + `      - id: other
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name + '-other'}"}
`
	before := rf.childWrites()
	rf.ctrl.SetRules(t.Context(), rf.loadRules(strings.Replace(other, "name: {{.Rule}}", "name: {{.Rule}}-other", 1)))
	rf.waitIdle()
	rf.waitVersions(map[string]string{canary: "v2", "*": "v1"})
	for k, n := range writesSince(before, rf.childWrites()) {
		if strings.HasPrefix(k, "configmaps/") && !strings.HasSuffix(k, "-other") {
			t.Errorf("after the rule was removed, %s was written %d times", k, n)
		}
	}
	if cur := rf.current(); cur == nil || cur.Phase != rollout.Progressing || cur.Step != 1 {
		t.Fatalf("the removed rule's revision: %+v, want it kept, Progressing at step 1", cur)
	}
	// Back with the same text: the rollout goes on where it was.
	rf.setRules(withRollout)
	rf.waitIdle()
	rf.waitVersions(map[string]string{canary: "v2", "*": "v1"})
	if cur := rf.current(); cur.Phase != rollout.Progressing || cur.Step != 1 {
		t.Errorf("the rule back: %s step %d, want Progressing step 1", cur.Phase, cur.Step)
	}
}

func TestRolloutDryRunPlansTheFirstStep(t *testing.T) {
	rf := startRollout(t, rolloutRules("v1", "yes", ""))
	rf.stop()
	before := rf.childWrites()
	revisionWrites := func(e controlplane.AuditEvent) bool {
		return e.ObjectRef.Namespace == rf.ns && e.ObjectRef.Resource == "controllerrevisions"
	}
	revsBefore := testenv.Writes(t, revisionWrites)

	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctrl, err := engine.New(testenv.Config(t), engine.Options{Workers: 2, DryRun: true, Identity: rf.opts.Identity, RevisionNamespace: rf.ns})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), logger))
	edited := rolloutRules("v2", "yes", fmt.Sprintf(fourSteps, "0s", "5m", "Pause"))
	ctrl.SetRules(ctx, rf.loadRules(edited))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ctrl.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	canary := rf.orderFor(edited)[0]
	planned := func() []string {
		var objects []string
		for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
			if e.Message != "Planned change" {
				continue
			}
			for i := 0; i+1 < len(e.ParameterKVList); i += 2 {
				if e.ParameterKVList[i] == "object" {
					objects = append(objects, fmt.Sprint(e.ParameterKVList[i+1]))
				}
			}
		}
		slices.Sort(objects)
		return slices.Compact(objects)
	}
	want := []string{"ConfigMap " + rf.ns + "/" + canary, "Widget.engine.kubecel.dev " + rf.ns + "/" + canary}
	rf.eventually(func() (bool, string) {
		got := planned()
		return slices.Equal(got, want), fmt.Sprintf("planned changes to %v, want %v", got, want)
	})
	// Every parent reconciled again once the rollout was looked at: a dry run takes no
	// step, so only the canary is planned at the new revision still.
	seen := ctrl.Reconciles()
	ctrl.EnqueueAll()
	rf.eventually(func() (bool, string) {
		n := ctrl.Reconciles() - seen
		return n >= uint64(len(rf.parents)) && ctrl.Idle(), fmt.Sprintf("%d reconciles since every parent was queued, want %d and then idle", n, len(rf.parents))
	})
	if got := planned(); !slices.Equal(got, want) {
		t.Errorf("after more ticks the dry run planned changes to %v, want only the first step's %v", got, want)
	}
	if w := writesSince(before, rf.childWrites()); len(w) > 0 {
		t.Errorf("the dry run wrote %v", w)
	}
	if n := testenv.Writes(t, revisionWrites) - revsBefore; n > 0 {
		t.Errorf("the dry run wrote %d revisions", n)
	}
}

func TestRolloutPolicyEditAlone(t *testing.T) {
	rf := startRollout(t, rolloutRules("v1", "yes", ""))
	first := rf.current()
	// Adding a policy alone makes no revision; the parents then name revision 1 in their
	// Synced condition (one status write each).
	rf.setRules(rolloutRules("v1", "yes", longPause))
	rf.eventually(func() (bool, string) {
		for _, p := range rf.parents {
			obj, err := rf.get(widgets, rf.ns, p)
			if err != nil {
				return false, err.Error()
			}
			if got := rollout.RevisionOf(obj, rf.rule); got != first.Hash {
				return false, fmt.Sprintf("parent %s names revision %q, want %q", p, got, first.Hash)
			}
		}
		return true, ""
	})
	if cur := rf.current(); cur.Number != 1 || len(cur.Steps) != 4 {
		t.Fatalf("after a policy edit alone: revision %d with steps %v, want revision 1 with the policy's 4 steps", cur.Number, cur.Steps)
	}
	rf.waitIdle()
	// The next edit rolls out from revision 1, which its parents name: the parents the
	// first step does not reach get no write.
	before := rf.childWrites()
	rf.setRules(rolloutRules("v2", "yes", longPause))
	canary := rf.order()[0]
	rf.waitVersions(map[string]string{canary: "v2", "*": "v1"})
	rf.waitIdle()
	if got := writtenParents(writesSince(before, rf.childWrites())); !slices.Equal(got, []string{canary}) {
		t.Errorf("the first step wrote to parents %v, want only %s", got, canary)
	}
}

// TestRolloutEditBeforeTheFirstRevisionIsStored: a rule's first revision is stored once
// the controller is idle; an edit that comes before (here: the controller is never idle)
// stores it first, and rolls out from it in steps, as from any stored revision.
func TestRolloutEditBeforeTheFirstRevisionIsStored(t *testing.T) {
	rf := startRolloutHeld(t, rolloutRules("v1", "yes", ""), true)
	rf.waitIdle()
	if cur := rf.current(); cur != nil {
		t.Fatalf("revision %d stored while the controller holds first revisions, want none", cur.Number)
	}
	rf.setRules(rolloutRules("v2", "yes", longPause))
	cur := rf.waitPhase(rollout.Progressing)
	revs, err := rf.store.List(t.Context(), rf.rule)
	if err != nil {
		t.Fatal(err)
	}
	first := rollout.Find(revs, cur.From)
	if cur.Number != 2 || cur.Step != 1 || first == nil || first.Number != 1 || !first.Proven {
		t.Fatalf("after the edit: revision %d at step %d from %q (stored: %v), want revision 2 at step 1 from the first revision, stored and proven", cur.Number, cur.Step, cur.From, first != nil)
	}
	// The first step holds one parent at v2; the others stay at v1.
	rf.eventually(func() (bool, string) {
		n := 0
		for _, v := range rf.versions() {
			if v == "v2" {
				n++
			}
		}
		return n == 1, fmt.Sprintf("%d parents at v2, want 1", n)
	})
}
