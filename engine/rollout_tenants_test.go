package engine_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/internal/testenv"
)

// label merges labels into a parent's.
func (rf *rolloutFixture) label(parent string, labels map[string]string) {
	rf.t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		rf.t.Fatal(err)
	}
	if _, err := testenv.Dynamic(rf.t).Resource(widgets).Namespace(rf.ns).Patch(rf.t.Context(), parent, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		rf.t.Fatalf("label widget %s: %v", parent, err)
	}
}

// TestRolloutCanariesAreTheRules: a tenant who labels its own parents as canaries
// (the label kubecel read before) puts nothing in the first step: the rule's policy
// names the canaries. (Before, the labelled parents took the first step, and kept
// never Ready they rolled back every tenant's rollout.)
func TestRolloutCanariesAreTheRules(t *testing.T) {
	rf := startRollout(t, rolloutRules("v1", "yes", ""))
	third := rolloutRules("v3", "yes", fmt.Sprintf(fourSteps, "1h", "5m", "Pause"))
	// The tenant labels two parents that revision 3's order takes late.
	order := rf.orderFor(third)
	tenant := order[len(order)-2:]
	for _, p := range tenant {
		rf.label(p, map[string]string{"rollout.kubecel.dev/canary": "true"})
	}
	early := order[len(order)-3]
	rf.label(early, map[string]string{"ring": "early"})
	policy := fmt.Sprintf(fourSteps, "1h", "5m", "Pause") + "      canaries: {selector: {matchLabels: {ring: early}}}\n"
	rf.setRules(rolloutRules("v2", "yes", policy))
	// Step 1 holds 5% of 20 parents: the one canary the policy names.
	rf.waitVersions(map[string]string{early: "v2", "*": "v1"})
	rf.waitIdle()
	if cur := rf.current(); cur.Step != 1 || cur.Phase != rollout.Progressing {
		t.Errorf("revision %d: %s at step %d, want Progressing at step 1", cur.Number, cur.Phase, cur.Step)
	}

	// Without canaries in the policy, the order is the revision's: the tenant's labels
	// change nothing.
	rf.setRules(third)
	rf.waitVersions(map[string]string{order[0]: "v3", "*": "v1"})
	rf.waitIdle()
	for _, p := range tenant {
		if v := rf.version(p); v != "v1" {
			t.Errorf("the tenant's labelled parent %s is at %s, want v1: its label put it in the first step", p, v)
		}
	}
}

// TestRolloutStateNotProven: someone who may write the rules' revisions, but does not
// hold the installation's key, marks a rollout under way Complete. The controller
// reports it and moves no parent; started again, the rule waits with a message saying
// why. (Before, the controller logged "Rollout complete" and moved every parent to the
// new revision at once.)
func TestRolloutStateNotProven(t *testing.T) {
	rf := startRollout(t, rolloutRules("v1", "yes", ""))
	rf.setRules(rolloutRules("v2", "yes", longPause))
	canary := rf.order()[0]
	rf.waitVersions(map[string]string{canary: "v2", "*": "v1"})
	rf.waitIdle()

	cur := rf.current()
	cr, err := testenv.Kube(t).AppsV1().ControllerRevisions(rf.ns).Get(t.Context(), cur.Object.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cr.Annotations[rollout.AnnotationPhase] = string(rollout.Complete)
	if _, err := testenv.Kube(t).AppsV1().ControllerRevisions(rf.ns).Update(t.Context(), cr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The controller saw the change: it says so on the revision.
	rf.eventually(func() (bool, string) {
		list, err := testenv.Kube(t).CoreV1().Events(rf.ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + cr.Name + ",reason=RolloutStateNotProven"})
		if err != nil || len(list.Items) == 0 {
			return false, fmt.Sprintf("no RolloutStateNotProven Event on %s (err %v)", cr.Name, err)
		}
		return list.Items[0].Type == corev1.EventTypeWarning, "the Event is not a Warning"
	})
	rf.ctrl.EnqueueAll()
	rf.waitIdle()
	rf.waitVersions(map[string]string{canary: "v2", "*": "v1"})

	rf.restart()
	rf.eventually(func() (bool, string) {
		_, pending := rf.ctrl.Ready()
		return slices.Contains(pending, rf.rule), fmt.Sprintf("waiting rules %v, want %s", pending, rf.rule)
	})
	rf.waitVersions(map[string]string{canary: "v2", "*": "v1"})
}
