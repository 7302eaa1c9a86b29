package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubecel/kubecel/rules"
)

// TestEditedRules loads each edit of the bench's rules (and of the --refs rules) and
// checks what it gives a parent: the value in its config child and in its status, and
// the policy only when asked for. The policy alone does not change the revision.
func TestEditedRules(t *testing.T) {
	for name, base := range map[string][]byte{"rules.yaml": rulesYAML, "rules-refs.yaml": rulesRefsYAML} {
		revs := map[string]string{}
		for _, tc := range []struct {
			value  string
			policy bool
		}{{"1", false}, {"2", true}, {"3", true}, {"3", false}} {
			data, err := editedRules(base, tc.value, tc.policy)
			if err != nil {
				t.Fatalf("%s: editedRules(%q, %v): %v", name, tc.value, tc.policy, err)
			}
			rs, err := rules.Load(data, rules.Options{})
			if err != nil {
				t.Fatalf("%s: edit %q: %v\n%s", name, tc.value, err, data)
			}
			r := rs.Rules[0]
			if got := r.Rollout != nil; got != tc.policy {
				t.Errorf("%s: edit %q: policy %v, want %v", name, tc.value, got, tc.policy)
			} else if tc.policy && !slices.Equal(r.Rollout.Steps, rolloutSteps) {
				t.Errorf("%s: edit %q: steps %v, want %v", name, tc.value, r.Rollout.Steps, rolloutSteps)
			}
			res, err := r.EvaluateWithRefs(context.Background(), newParent(benchNS, 7).Object, rules.Observed{}, settingsSource{})
			if err != nil {
				t.Fatalf("%s: edit %q: %v", name, tc.value, err)
			}
			if res.Status["edit"] != tc.value {
				t.Errorf("%s: edit %q: status edit %v", name, tc.value, res.Status["edit"])
			}
			for _, c := range res.Children {
				data, _ := c.Object["data"].(map[string]any)
				if got, want := data["edit"], map[bool]any{true: tc.value, false: nil}[c.ID == "config"]; got != want {
					t.Errorf("%s: edit %q: child %s has edit %v, want %v", name, tc.value, c.ID, got, want)
				}
			}
			if prev, ok := revs[tc.value]; ok && prev != r.Revision {
				t.Errorf("%s: edit %q: the policy changed the revision %s to %s", name, tc.value, prev, r.Revision)
			}
			revs[tc.value] = r.Revision
		}
		if revs["1"] == revs["2"] || revs["2"] == revs["3"] {
			t.Errorf("%s: the edits share a revision: %v", name, revs)
		}
	}
	if _, err := editedRules([]byte("rules: []\n"), "1", false); err == nil || !strings.Contains(err.Error(), `"port: ${string(parent.spec.port)}"`) {
		t.Errorf("editedRules of rules without the anchor: %v", err)
	}
}

func TestKlogTime(t *testing.T) {
	now := time.Date(2026, 11, 25, 23, 50, 0, 0, time.UTC)
	got, err := klogTime(`I1125 23:45:01.123456   11282 reload.go:254] "Loaded rules" parts=1 failing=0 rules=1 hash="abc"`, now)
	if want := time.Date(2026, 11, 25, 23, 45, 1, 123456000, time.UTC); err != nil || !got.Equal(want) {
		t.Errorf("klogTime = %v, %v; want %v", got, err, want)
	}
	// A line of 31 December read on 1 January is of the year before.
	got, err = klogTime(`I1231 23:59:59.000000 1 x.go:1] "Loaded rules"`, time.Date(2027, 1, 1, 0, 0, 1, 0, time.UTC))
	if want := time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC); err != nil || !got.Equal(want) {
		t.Errorf("klogTime across the year = %v, %v; want %v", got, err, want)
	}
	for _, line := range []string{"", `{"msg":"Loaded rules"}`, "I1125 25:00:00.000000 1 x.go:1] x"} {
		if _, err := klogTime(line, now); err == nil {
			t.Errorf("klogTime(%q): no error", line)
		}
	}
}

func TestReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubecel.log")
	log := `I1125 23:40:00.000000 1 reload.go:254] "Loaded rules" parts=1 failing=0 rules=1 hash="a"
I1125 23:40:01.000000 1 controller.go:246] "Starting controller" workers=16 dryRun=false
I1125 23:41:02.500000 1 reload.go:254] "Loaded rules" parts=1 failing=0 rules=1 hash="b"
`
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	n, at, err := reloads(path)
	if err != nil || n != 2 || at.Format("15:04:05.000") != "23:41:02.500" {
		t.Errorf("reloads = %d, %v, %v; want 2 at 23:41:02.500", n, at, err)
	}
}

func TestStepClock(t *testing.T) {
	// 200 parents: steps of 2, 20, 100 and 200 parents. A look may reach several.
	c := stepClock{steps: rolloutSteps}
	for _, tc := range []struct{ at, reached int }{{0, 0}, {1, 0}, {2, 1}, {40, 2}, {99, 2}, {200, 4}} {
		c.see(tc.at, 200)
		if len(c.reached) != tc.reached {
			t.Errorf("after %d of 200 parents: %d steps reached, want %d", tc.at, len(c.reached), tc.reached)
		}
	}
	if got := c.since(c.reached[0]); got[0] != 0 || got[3] != got[2] || got[1] < 0 {
		t.Errorf("since = %v", got)
	}
	if got := stepTimes([]time.Duration{100 * time.Millisecond, 2 * time.Second}); got != "0.1 / 2.0 s" {
		t.Errorf("stepTimes = %q", got)
	}
}

// TestEditRowAndGoal writes rules-edit rows as the bench does and reads the goal back.
func TestEditRowAndGoal(t *testing.T) {
	res := &results{n: 10000, machine: machine{cpus: 2, load: "1.00 1.00 1.00", loadAfter: "2.00 2.00 2.00"}}
	e := &editResult{
		immediate: editRun{took: 40 * time.Second, sinceWrite: 41 * time.Second, writes: writeCounts{"patch configmaps": 10000, "patch webapps/status": 10000}},
		rollout:   editRun{took: 46 * time.Second, sinceWrite: 47 * time.Second, writes: writeCounts{"patch configmaps": 10000, "patch webapps/status": 10000}},
		steps:     []time.Duration{time.Second, 3 * time.Second, 20 * time.Second, 46 * time.Second},
		phase:     "Complete",
	}
	row := e.row(res)
	if !strings.HasSuffix(row, " | 10000 | 2 | 1.00 1.00 1.00 -> 2.00 2.00 2.00 | 40.0 | 46.0 (1.15x) | 1.0 / 3.0 / 20.0 / 46.0 | 2.00 / 2.00 | 41.0 / 47.0 | Complete | defaults |  |\n") {
		t.Errorf("row = %q", row)
	}
	goals := editGoal(runs(editHeader, editHeading))
	if len(goals) != 1 || goals[0].met != "not measured" {
		t.Errorf("goal without rows = %v", goals)
	}
	slow := *e
	slow.rollout.took = 60 * time.Second
	slow.rollout.writes = writeCounts{"patch configmaps": 10000, "patch webapps/status": 20000}
	doc := editHeader + row + slow.row(&results{n: 1000, machine: res.machine}) // N=1,000: not judged
	g := editGoal(runs(doc, editHeading))[0]
	if !strings.HasPrefix(g.measured, "rollout **1.15x** the immediate edit (46.0 s against 40.0 s); writes per parent **2.00** rollout, 2.00 immediate (row ") || g.met != "time **met**; writes **met**" {
		t.Errorf("goal = %+v", g)
	}
	g = editGoal(runs(doc+slow.row(res), editHeading))[0]
	if g.met != "time **not met**; writes **not met**" {
		t.Errorf("goal of a slow row = %+v", g)
	}
}
