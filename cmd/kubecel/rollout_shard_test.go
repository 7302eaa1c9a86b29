package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/internal/testenv"
)

// rolloutShardParents is how many widgets the sharded rollout tests spread over their
// replicas: the four steps of 5%, 25%, 50% and 100% hold 2, 8, 16 and 32 of them.
const rolloutShardParents = 32

// TestRolloutProcessSharded runs three `kubecel run --sharding` replicas and edits their
// rules to a four-step rollout that pauses 2s after each step. Polled over and over, no
// parent's child is ever at v2 unless the parent is one of the members that the stored
// state's step holds in the rollout order; the stored step goes 1, 2, 3, 4, each step
// taken by one replica; the rollout ends Complete with every parent at v2, and then no
// replica writes anything but its Lease for 10 seconds (there is no flag or signal to
// resync a process: the window follows the Complete, whose handling queues every parent
// on every replica).
func TestRolloutProcessSharded(t *testing.T) {
	rolloutSharded(t, false)
}

// TestRolloutProcessShardedReplicaLeaves is TestRolloutProcessSharded with one of the
// three replicas stopped by SIGTERM while the rollout is at its second step: the two
// left take over its parents, no parent gets ahead of its step, and the rollout
// completes.
func TestRolloutProcessShardedReplicaLeaves(t *testing.T) {
	rolloutSharded(t, true)
}

// stepTaken matches the log line of a replica that took a rollout step.
var stepTaken = regexp.MustCompile(`"Rollout step taken".* step=(\d+)`)

func rolloutSharded(t *testing.T, leave bool) {
	w := newRolloutWorld(t, rolloutShardParents, "w05", "w21")
	sw := &shardWorld{t: t, bin: w.bin, cp: w.cp, kube: w.kube, ns: w.ns, rules: w.rules, replicas: map[string]*replica{},
		health: map[string]string{}, metrics: map[string]string{}}
	names := []string{"a", "b", "c"}
	for _, name := range names {
		sw.start(name)
	}
	sw.settled(names...)
	w.waitParents(map[string]string{"*": "v1"}, map[string]string{"*": ""})
	if cur := w.current(); cur == nil || cur.Number != 1 || cur.Phase != rollout.Complete {
		t.Fatalf("the rule's first revision: %+v, want number 1, Complete", cur)
	}

	w.setRules(rolloutRulesText(w.ns, "v2", rolloutPolicy("2s")))
	order := w.order()
	steps := []float64{5, 25, 50, 100}
	if first := order[:rollout.Members(steps, 1, len(order))]; !slices.Equal(sorted(first), []string{"w05", "w21"}) {
		t.Fatalf("the first step holds %v, want the canaries w05 and w21", first)
	}
	var seen []int // the steps the stored state was seen at, in order
	var left bool
	polls := 0
	var done *rollout.Revision
	testenv.Eventually(t, 5*time.Minute, func() (bool, string) {
		polls++
		// The children first, then the state: a state read after the children is at
		// least as far as the one that moved them.
		vs := w.versions()
		cur := w.current()
		var at []string
		for _, p := range order {
			if vs[p] == "v2" {
				at = append(at, p)
			}
		}
		if cur.Number == 1 {
			if len(at) > 0 {
				t.Fatalf("parents %v at v2 before revision 2 was stored", at)
			}
			return false, "revision 2 not stored yet"
		}
		switch cur.Phase {
		case rollout.Progressing:
			if len(seen) == 0 || seen[len(seen)-1] != cur.Step {
				seen = append(seen, cur.Step)
			}
			members := order[:rollout.Members(steps, cur.Step, len(order))]
			for _, p := range at {
				if !slices.Contains(members, p) {
					t.Fatalf("step %d: parent %s is at v2 but not among the step's %d members %v (parents at v2: %v)", cur.Step, p, len(members), members, at)
				}
			}
			if leave && !left && cur.Step == 2 {
				// Not sw.signal: the polls go on while the replica stops.
				if err := sw.replicas["b"].cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				left = true
				t.Logf("SIGTERM to replica b at step 2, %d parents at v2", len(at))
			}
		case rollout.Complete:
			done = cur
		default:
			t.Fatalf("revision %d is %s at step %d: %s", cur.Number, cur.Phase, cur.Step, cur.Message)
		}
		return cur.Phase == rollout.Complete && len(at) == len(order),
			fmt.Sprintf("revision %d %s at step %d, %d of %d parents at v2", cur.Number, cur.Phase, cur.Step, len(at), len(order))
	})
	mark := len(auditEvents(t, w.cp))
	t.Logf("steps seen %v over %d polls", seen, polls)
	if !slices.Equal(seen, []int{1, 2, 3, 4}) {
		t.Errorf("the stored step went %v, want 1, 2, 3, 4", seen)
	}
	w.waitParents(map[string]string{"*": "v2"}, map[string]string{"*": done.Hash})

	if leave {
		r := sw.replicas["b"]
		select {
		case <-r.done:
		case <-time.After(time.Minute):
			t.Fatalf("replica b still runs a minute after SIGTERM")
		}
		if code := r.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("replica b exited with %d after SIGTERM, want 0", code)
		}
		names = []string{"a", "c"}
		sw.settled(names...)
	}
	// Every step after the first was taken once, by one replica.
	var taken []string
	for _, name := range []string{"a", "b", "c"} {
		for _, m := range stepTaken.FindAllStringSubmatch(readFile(sw.replicas[name].log), -1) {
			taken = append(taken, "step "+m[1]+" by "+name)
		}
	}
	slices.Sort(taken)
	t.Logf("steps taken: %v", taken)
	if len(taken) != 3 || !strings.HasPrefix(taken[0], "step 2 ") || !strings.HasPrefix(taken[1], "step 3 ") || !strings.HasPrefix(taken[2], "step 4 ") {
		t.Errorf("the replicas logged the steps %v, want steps 2, 3 and 4 once each", taken)
	}

	// At rest: each live replica saw the Complete (and queued every parent it serves),
	// then nothing but the Leases is written.
	testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
		for _, name := range names {
			if !strings.Contains(readFile(sw.replicas[name].log), `"Rollout complete"`) {
				return false, fmt.Sprintf("replica %s has not logged the rollout complete", name)
			}
		}
		return true, ""
	})
	atRest(t, w.cp, sw.urls(names), w.annotate)
	if objs := objectWrites(w.kubecelWrites(mark)); len(objs) > 0 {
		t.Errorf("after the rollout was Complete the replicas wrote %v, want nothing", objs)
	}
	t.Logf("writes of the revision: %v", revisionWrites(sw))
	for _, name := range []string{"a", "b", "c"} {
		var errs []string
		for line := range strings.Lines(readFile(sw.replicas[name].log)) {
			if strings.HasPrefix(line, "E") || strings.Contains(strings.ToLower(line), "conflict") {
				errs = append(errs, strings.TrimSpace(line))
			}
		}
		t.Logf("replica %s: %d error or conflict lines %v", name, len(errs), errs)
	}
}

// revisionWrites counts the replicas' writes of the rule's revisions, by replica, verb
// and response code (409: a conflict, another replica wrote first).
func revisionWrites(sw *shardWorld) map[string]int {
	out := map[string]int{}
	for _, e := range auditEvents(sw.t, sw.cp) {
		id, ok := strings.CutPrefix(strings.Fields(e.UserAgent + " ")[0], "kubecel/")
		if ok && e.ObjectRef.Resource == "controllerrevisions" {
			out[fmt.Sprintf("%s %s %d", sw.nameOf(id), e.Verb, e.ResponseStatus.Code)]++
		}
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
