package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestOps(t *testing.T) {
	steps := []float64{10, 50, 100}
	progressing := State{Phase: Progressing, Step: 2, From: "h1", StepStarted: t0, HealthySince: t0.Add(time.Minute), Steps: steps}
	paused := State{Phase: Paused, Step: 2, From: "h1", StepStarted: t0, Message: "step 2 (50%) not healthy within 10m0s: healthy is false", Steps: steps}
	h1 := rev(1, "h1", State{Phase: Complete})
	now := t0.Add(time.Hour + 300*time.Millisecond)
	ops := map[string]func(cur *Revision, revs []*Revision) (State, error){
		"pause":  func(cur *Revision, _ []*Revision) (State, error) { return Pause(cur) },
		"resume": func(cur *Revision, _ []*Revision) (State, error) { return Resume(cur, now) },
		"undo":   Undo,
	}
	tests := []struct {
		name    string
		op      string
		cur     *Revision
		revs    []*Revision
		want    State
		wantErr string
	}{{
		name: "pause a Progressing rollout", op: "pause", cur: rev(2, "h2", progressing),
		want: State{Phase: Paused, Step: 2, From: "h1", StepStarted: t0, Message: "paused by kubecel rollout pause", Steps: steps},
	}, {
		name: "pause a Paused rollout", op: "pause", cur: rev(2, "h2", paused),
		wantErr: "revision 2 is Paused: only a Progressing rollout can be paused",
	}, {
		name: "pause a Complete revision", op: "pause", cur: rev(2, "h2", State{Phase: Complete}),
		wantErr: "revision 2 is Complete: only a Progressing rollout can be paused",
	}, {
		name: "pause without a revision", op: "pause",
		wantErr: "the rule has no stored revision: it never ran, or runs under another installation",
	}, {
		name: "resume a Paused rollout: its deadline starts again", op: "resume", cur: rev(2, "h2", paused),
		want: State{Phase: Progressing, Step: 2, From: "h1", StepStarted: t0.Add(time.Hour), Steps: steps},
	}, {
		name: "resume a Progressing rollout", op: "resume", cur: rev(2, "h2", progressing),
		wantErr: "revision 2 is Progressing: only a Paused rollout can be resumed",
	}, {
		name: "resume a RolledBack revision", op: "resume", cur: rev(2, "h2", State{Phase: RolledBack, From: "h1"}),
		wantErr: "revision 2 is RolledBack: only a Paused rollout can be resumed",
	}, {
		name: "resume without a revision", op: "resume",
		wantErr: "the rule has no stored revision: it never ran, or runs under another installation",
	}, {
		name: "undo a Progressing rollout", op: "undo", cur: rev(2, "h2", progressing), revs: []*Revision{h1},
		want: State{Phase: RolledBack, Step: 2, From: "h1", StepStarted: t0, Steps: steps,
			Message: "undone by kubecel rollout undo: every parent is back at revision 1 (h1)"},
	}, {
		name: "undo a Paused rollout", op: "undo", cur: rev(2, "h2", paused), revs: []*Revision{h1},
		want: State{Phase: RolledBack, Step: 2, From: "h1", StepStarted: t0, Steps: steps,
			Message: "undone by kubecel rollout undo: every parent is back at revision 1 (h1)"},
	}, {
		name: "undo a Complete revision", op: "undo", cur: rev(2, "h2", State{Phase: Complete, From: "h1"}), revs: []*Revision{h1},
		want: State{Phase: RolledBack, From: "h1", Message: "undone by kubecel rollout undo: every parent is back at revision 1 (h1)"},
	}, {
		name: "undo twice", op: "undo", cur: rev(2, "h2", State{Phase: RolledBack, From: "h1"}), revs: []*Revision{h1},
		wantErr: "revision 2 was already rolled back to revision 1 (h1): edit the rules to roll forward",
	}, {
		name: "undo the first revision", op: "undo", cur: rev(1, "h1", State{Phase: Complete}), revs: []*Revision{h1},
		wantErr: "revision 1 is the rule's first: there is no earlier revision to go back to",
	}, {
		name: "undo to a revision no longer stored", op: "undo", cur: rev(7, "h7", State{Phase: Complete, From: "h6"}), revs: []*Revision{h1},
		wantErr: "revision 7 rolled from h6, which is no longer stored",
	}, {
		name: "undo without a revision", op: "undo",
		wantErr: "the rule has no stored revision: it never ran, or runs under another installation",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before State
			if tt.cur != nil {
				before = tt.cur.State
			}
			got, err := ops[tt.op](tt.cur, append(tt.revs, tt.cur))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("%s: error %v, want %q", tt.op, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tt.op, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.op, diff)
			}
			if diff := cmp.Diff(before, tt.cur.State); diff != "" {
				t.Errorf("%s changed the revision it was given (-before +after):\n%s", tt.op, diff)
			}
		})
	}
}
