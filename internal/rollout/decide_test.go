package rollout

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

// rev is a stored revision for the tests: number n, hash h, in state s.
func rev(n int64, h string, s State) *Revision {
	return &Revision{Rule: "web", Hash: h, Number: n, State: s}
}

// change is what a test compares of a Change: revisions by number.
type change struct {
	Create    bool
	Update    int64 // number of the revision updated, 0 when none
	Number    int64
	State     State
	Supersede []int64
}

func viewChange(c Change) change {
	v := change{Create: c.Create, Number: c.Number, State: c.State}
	if c.Update != nil {
		v.Update = c.Update.Number
	}
	for _, r := range c.Supersede {
		v.Supersede = append(v.Supersede, r.Number)
	}
	return v
}

func TestStart(t *testing.T) {
	complete := func(from string) State { return State{Phase: Complete, From: from} }
	progressing := State{Phase: Progressing, Step: 2, From: "h1", StepStarted: t0.Add(-time.Hour), HealthySince: t0.Add(-time.Minute), Steps: []float64{10, 50, 100}}
	paused := State{Phase: Paused, Step: 1, From: "h1", StepStarted: t0.Add(-time.Hour), Message: "paused by kubecel rollout pause", Steps: []float64{10, 100}}
	started := State{Phase: Progressing, Step: 1, From: "h2", StepStarted: t0}
	tests := []struct {
		name   string
		revs   []*Revision
		hash   string
		rolls  bool
		want   change
		wantOK bool
	}{{
		name: "first revision is Complete at once, with a policy", hash: "h1", rolls: true,
		want: change{Create: true, Number: 1, State: State{Phase: Complete}}, wantOK: true,
	}, {
		name: "first revision is Complete at once, without a policy", hash: "h1",
		want: change{Create: true, Number: 1, State: State{Phase: Complete}}, wantOK: true,
	}, {
		name: "new text with a policy rolls from the newest Complete revision",
		revs: []*Revision{rev(1, "h1", complete("")), rev(2, "h2", complete("h1"))}, hash: "h3", rolls: true,
		want: change{Create: true, Number: 3, State: started}, wantOK: true,
	}, {
		name: "new text without a policy is Complete at once, from the newest Complete revision",
		revs: []*Revision{rev(1, "h1", complete("")), rev(2, "h2", complete("h1"))}, hash: "h3",
		want: change{Create: true, Number: 3, State: complete("h2")}, wantOK: true,
	}, {
		name: "the start time is truncated to the second, in UTC",
		revs: []*Revision{rev(1, "h2", complete(""))}, hash: "h3", rolls: true,
		want:   change{Create: true, Number: 2, State: started},
		wantOK: true,
	}, {
		name: "the current text with its phase standing changes nothing",
		revs: []*Revision{rev(1, "h1", complete("")), rev(2, "h2", progressing)}, hash: "h2", rolls: true,
	}, {
		name: "the current Complete text without a policy changes nothing",
		revs: []*Revision{rev(1, "h1", complete(""))}, hash: "h1",
	}, {
		name: "a rolled back current revision stays held while its text is unchanged",
		revs: []*Revision{rev(1, "h1", complete("")), rev(2, "h2", State{Phase: RolledBack, Step: 1, From: "h1"})}, hash: "h2", rolls: true,
	}, {
		name: "policy removed mid-rollout: a Progressing rollout completes at once",
		revs: []*Revision{rev(1, "h1", complete("")), rev(2, "h2", progressing)}, hash: "h2",
		want: change{Update: 2, Number: 2, State: func() State {
			s := progressing
			s.Phase, s.Message = Complete, "completed at once: the rule no longer has a rollout policy"
			return s
		}()},
		wantOK: true,
	}, {
		name: "policy removed mid-rollout: a Paused rollout completes at once",
		revs: []*Revision{rev(1, "h1", complete("")), rev(2, "h2", paused)}, hash: "h2",
		want: change{Update: 2, Number: 2, State: func() State {
			s := paused
			s.Phase, s.Message = Complete, "completed at once: the rule no longer has a rollout policy"
			return s
		}()},
		wantOK: true,
	}, {
		name: "text back at a Complete revision makes it current and Complete, superseding the rollout",
		revs: []*Revision{rev(1, "h1", complete("")), rev(2, "h2", progressing)}, hash: "h1", rolls: true,
		want: change{Update: 1, Number: 3, State: complete(""), Supersede: []int64{2}}, wantOK: true,
	}, {
		name: "text back at a Complete revision drops its old message and is undone to the one before",
		revs: []*Revision{rev(1, "h1", State{Phase: Complete, From: "h0", Message: "completed at once: the rule no longer has a rollout policy"}), rev(2, "h2", complete("h1"))}, hash: "h1", rolls: true,
		want: change{Update: 1, Number: 3, State: complete("h2")}, wantOK: true,
	}, {
		name: "text back at the first revision, after a rollout that did not complete, keeps its origin",
		revs: []*Revision{rev(1, "h1", complete("")), rev(2, "h2", State{Phase: Paused, Step: 1, From: "h1", StepStarted: t0})}, hash: "h1", rolls: true,
		want: change{Update: 1, Number: 3, State: complete(""), Supersede: []int64{2}}, wantOK: true,
	}, {
		name: "text back at a RolledBack revision rolls out again from the first step",
		revs: []*Revision{rev(1, "h2", complete("")), rev(2, "h1", State{Phase: RolledBack, Step: 3, From: "h2", Message: "undone"}), rev(3, "h3", complete("h2"))}, hash: "h1", rolls: true,
		want: change{Update: 2, Number: 4, State: State{Phase: Progressing, Step: 1, From: "h3", StepStarted: t0}}, wantOK: true,
	}, {
		name: "text back at a Superseded revision rolls out again, superseding the current rollout",
		revs: []*Revision{rev(1, "h2", complete("")), rev(2, "h1", State{Phase: Superseded, Step: 2, From: "h2"}), rev(3, "h3", State{Phase: Progressing, Step: 1, From: "h2", StepStarted: t0})}, hash: "h1", rolls: true,
		want: change{Update: 2, Number: 4, State: State{Phase: Progressing, Step: 1, From: "h2", StepStarted: t0}, Supersede: []int64{3}}, wantOK: true,
	}, {
		name: "text back at a RolledBack revision without a policy is Complete at once",
		revs: []*Revision{rev(1, "h2", complete("")), rev(2, "h1", State{Phase: RolledBack, Step: 1, From: "h2"}), rev(3, "h3", complete("h2"))}, hash: "h1",
		want: change{Update: 2, Number: 4, State: complete("h3")}, wantOK: true,
	}, {
		name: "every Progressing and Paused rollout is superseded by a new text",
		revs: []*Revision{
			rev(1, "h1", complete("")), rev(2, "h2", paused), rev(3, "h3", State{Phase: RolledBack, From: "h1"}),
			rev(4, "h4", State{Phase: Superseded, From: "h1"}), rev(5, "h5", progressing),
		},
		hash: "h6", rolls: true,
		want:   change{Create: true, Number: 6, State: State{Phase: Progressing, Step: 1, From: "h1", StepStarted: t0}, Supersede: []int64{2, 5}},
		wantOK: true,
	}, {
		name: "with no Complete revision left, a new text rolls from where the current one rolled from",
		revs: []*Revision{rev(4, "h4", State{Phase: RolledBack, From: "h3"}), rev(3, "h3", State{Phase: Superseded, From: ""})}, hash: "h5", rolls: true,
		want: change{Create: true, Number: 5, State: State{Phase: Progressing, Step: 1, From: "h3", StepStarted: t0}}, wantOK: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			revs := sortedByNumber(tt.revs)
			got, ok := Start(revs, tt.hash, tt.rolls, t0.Add(400*time.Millisecond).In(time.FixedZone("CET", 3600)))
			if ok != tt.wantOK {
				t.Fatalf("Start ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, viewChange(got)); diff != "" {
				t.Errorf("Start (-want +got):\n%s", diff)
			}
		})
	}
}

// sortedByNumber sorts revisions oldest first, as Store.List returns them.
func sortedByNumber(revs []*Revision) []*Revision {
	out := append([]*Revision(nil), revs...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j].Number < out[i].Number {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestNext(t *testing.T) {
	steps := []float64{1, 10, 50, 100}
	policy := func(pause time.Duration, rollback bool) Policy {
		return Policy{Steps: steps, Pause: pause, ProgressDeadline: 10 * time.Minute, Rollback: rollback}
	}
	healthy := Health{Members: 3, Check: true}
	at := func(step int, started, healthySince time.Time) State {
		return State{Phase: Progressing, Step: step, From: "h1", StepStarted: started, HealthySince: healthySince, Steps: steps}
	}
	var failing []string
	for i := range 12 {
		failing = append(failing, fmt.Sprintf("ns/p%02d: Ready is False: down", i))
	}
	tests := []struct {
		name    string
		s       State
		p       Policy
		h       Health
		now     time.Time
		want    State
		changed bool
	}{{
		name: "healthy without a pause: the next step begins",
		s:    at(1, t0, time.Time{}), p: policy(0, false), h: healthy, now: t0.Add(time.Minute),
		want: at(2, t0.Add(time.Minute), time.Time{}), changed: true,
	}, {
		name: "healthy with a pause: the pause begins",
		s:    at(2, t0, time.Time{}), p: policy(5*time.Minute, false), h: healthy, now: t0.Add(time.Minute),
		want: at(2, t0, t0.Add(time.Minute)), changed: true,
	}, {
		name: "healthy within the pause: nothing changes",
		s:    at(2, t0, t0.Add(time.Minute)), p: policy(5*time.Minute, false), h: healthy, now: t0.Add(5 * time.Minute),
		want: at(2, t0, t0.Add(time.Minute)),
	}, {
		name: "healthy for the whole pause: the next step begins",
		s:    at(2, t0, t0.Add(time.Minute)), p: policy(5*time.Minute, false), h: healthy, now: t0.Add(6 * time.Minute),
		want: at(3, t0.Add(6*time.Minute), time.Time{}), changed: true,
	}, {
		name: "health lost during the pause: the pause starts again",
		s:    at(2, t0, t0.Add(time.Minute)), p: policy(5*time.Minute, false), h: Health{Members: 3, Failing: failing[:1], Check: true}, now: t0.Add(3 * time.Minute),
		want: at(2, t0, time.Time{}), changed: true,
	}, {
		name: "not healthy before the deadline, never healthy: nothing changes",
		s:    at(2, t0, time.Time{}), p: policy(0, false), h: Health{Members: 3, Check: false}, now: t0.Add(9 * time.Minute),
		want: at(2, t0, time.Time{}),
	}, {
		name: "not healthy at the deadline, onFailure Pause: Paused, naming at most 10 parents",
		s:    at(2, t0, t0.Add(time.Minute)), p: policy(time.Minute, false), h: Health{Members: 30, Failing: failing, Check: true}, now: t0.Add(10 * time.Minute),
		want: State{Phase: Paused, Step: 2, From: "h1", StepStarted: t0, Steps: steps,
			Message: "step 2 (10%) not healthy within 10m0s: 12 of 30 parents not healthy: ns/p00: Ready is False: down; ns/p01: Ready is False: down; " +
				"ns/p02: Ready is False: down; ns/p03: Ready is False: down; ns/p04: Ready is False: down; ns/p05: Ready is False: down; " +
				"ns/p06: Ready is False: down; ns/p07: Ready is False: down; ns/p08: Ready is False: down; ns/p09: Ready is False: down; and 2 more"},
		changed: true,
	}, {
		name: "not healthy at the deadline, onFailure Rollback: RolledBack, with the check's error",
		s:    at(1, t0, time.Time{}), p: policy(0, true), h: Health{Members: 1, Failing: failing[:1], CheckErr: fmt.Errorf("no such key: ready")}, now: t0.Add(11 * time.Minute),
		want: State{Phase: RolledBack, Step: 1, From: "h1", StepStarted: t0, Steps: steps,
			Message: "step 1 (1%) not healthy within 10m0s: 1 of 1 parents not healthy: ns/p00: Ready is False: down; healthy: no such key: ready"},
		changed: true,
	}, {
		name: "the healthy check false at the deadline",
		s:    at(3, t0, time.Time{}), p: policy(0, false), h: Health{Members: 15}, now: t0.Add(10 * time.Minute),
		want:    State{Phase: Paused, Step: 3, From: "h1", StepStarted: t0, Steps: steps, Message: "step 3 (50%) not healthy within 10m0s: healthy is false"},
		changed: true,
	}, {
		name: "exactly ten failing parents are all named",
		s:    at(1, t0, time.Time{}), p: policy(0, false), h: Health{Members: 10, Failing: failing[:10], Check: true}, now: t0.Add(10 * time.Minute),
		want: State{Phase: Paused, Step: 1, From: "h1", StepStarted: t0, Steps: steps,
			Message: "step 1 (1%) not healthy within 10m0s: 10 of 10 parents not healthy: ns/p00: Ready is False: down; ns/p01: Ready is False: down; " +
				"ns/p02: Ready is False: down; ns/p03: Ready is False: down; ns/p04: Ready is False: down; ns/p05: Ready is False: down; " +
				"ns/p06: Ready is False: down; ns/p07: Ready is False: down; ns/p08: Ready is False: down; ns/p09: Ready is False: down"},
		changed: true,
	}, {
		name: "the last step healthy: Complete",
		s:    at(4, t0, t0.Add(time.Minute)), p: policy(time.Minute, false), h: healthy, now: t0.Add(2 * time.Minute),
		want: State{Phase: Complete, Step: 4, From: "h1", Steps: steps}, changed: true,
	}, {
		name: "a Paused rollout does not move",
		s:    State{Phase: Paused, Step: 2, From: "h1"}, p: policy(0, false), h: healthy, now: t0,
		want: State{Phase: Paused, Step: 2, From: "h1"},
	}, {
		name: "a Complete rollout does not move",
		s:    State{Phase: Complete, From: "h1"}, p: policy(0, false), h: healthy, now: t0,
		want: State{Phase: Complete, From: "h1"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failingBefore := append([]string(nil), tt.h.Failing...)
			got, changed := Next(tt.s, tt.p, tt.h, tt.now.Add(700*time.Millisecond))
			if changed != tt.changed {
				t.Errorf("Next changed = %v, want %v", changed, tt.changed)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Next (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(failingBefore, tt.h.Failing); diff != "" {
				t.Errorf("Next changed the failing parents passed in (-before +after):\n%s", diff)
			}
		})
	}
}
