package rollout

import (
	"fmt"
	"strings"
	"time"
)

// Current is the current revision of a rule: the highest-numbered; nil when none.
func Current(revs []*Revision) *Revision {
	if len(revs) == 0 {
		return nil
	}
	return revs[len(revs)-1]
}

// Find returns the revision of a rule with that hash, or nil.
func Find(revs []*Revision, hash string) *Revision {
	for _, r := range revs {
		if r.Hash == hash {
			return r
		}
	}
	return nil
}

// lastComplete is the newest Complete revision other than hash, or nil.
func lastComplete(revs []*Revision, hash string) *Revision {
	for i := len(revs) - 1; i >= 0; i-- {
		if revs[i].Phase == Complete && revs[i].Hash != hash {
			return revs[i]
		}
	}
	return nil
}

// Change is what storing a rules file's revision of a rule takes: a revision to create
// or one to update (to Number and State), and rollouts it supersedes.
type Change struct {
	// Create is true when the revision is new; else Update is the revision to change.
	Create bool
	Update *Revision
	Number int64
	State  State
	// Supersede lists rollouts still under way that the change replaces.
	Supersede []*Revision
}

// Start decides what making hash the rule's revision takes, given its stored revisions
// (oldest first), whether the rule has a rollout policy, and the time. ok is false when
// the stored state already stands: hash is current, and its phase fits the policy.
//
//   - A new text starts a rollout from the newest Complete revision (or, without a
//     policy or without such a revision, is Complete at once).
//   - A text back at a Complete revision makes it current again, Complete: every parent
//     goes back to it at once.
//   - A text back at any other revision starts its rollout again from the first step.
//   - A current rollout whose policy was removed completes at once.
func Start(revs []*Revision, hash string, rolls bool, now time.Time) (Change, bool) {
	cur, top := Find(revs, hash), Current(revs)
	var next int64 = 1
	if top != nil {
		next = top.Number + 1
	}
	if cur != nil && cur == top {
		if !rolls && (cur.Phase == Progressing || cur.Phase == Paused) {
			st := cur.State
			st.Phase, st.Message = Complete, "completed at once: the rule no longer has a rollout policy"
			return Change{Update: cur, Number: cur.Number, State: st}, true
		}
		return Change{}, false
	}
	ch := Change{Create: cur == nil, Update: cur, Number: next}
	for _, r := range revs {
		if r != cur && (r.Phase == Progressing || r.Phase == Paused) {
			ch.Supersede = append(ch.Supersede, r)
		}
	}
	switch {
	case cur != nil && cur.Phase == Complete:
		// Undo of it goes back to where the parents were: the newest other complete
		// revision.
		ch.State = cur.State
		ch.State.Message = ""
		if prev := lastComplete(revs, hash); prev != nil {
			ch.State.From = prev.Hash
		}
	default:
		from := lastComplete(revs, hash)
		if from == nil && top != nil && cur == nil {
			// No revision ever completed (every one was undone or superseded): roll from
			// the one the parents are at, the current one's origin.
			from = Find(revs, top.From)
		}
		switch {
		case from == nil:
			ch.State = State{Phase: Complete}
		case !rolls:
			ch.State = State{Phase: Complete, From: from.Hash}
		default:
			ch.State = State{Phase: Progressing, Step: 1, From: from.Hash, StepStarted: now.UTC().Truncate(time.Second)}
		}
	}
	return ch, true
}

// Policy is what a rule's rollout says about its steps (rules.Rollout).
type Policy struct {
	Steps            []float64
	Pause            time.Duration
	ProgressDeadline time.Duration
	Rollback         bool
}

// Health is what the members of the steps taken are like.
type Health struct {
	// Members is how many parents the steps taken hold; Failing names those not yet
	// healthy, each with why ("ns/name: reason").
	Members int
	Failing []string
	// Check is the error of the rollout's `healthy` expression, or false when it does
	// not hold; nil and true when it holds or there is none.
	Check    bool
	CheckErr error
}

// Healthy reports whether the step holds: every member healthy and the check true.
func (h Health) Healthy() bool { return len(h.Failing) == 0 && h.Check && h.CheckErr == nil }

// why describes an unhealthy step, naming at most 10 failing parents.
func (h Health) why() string {
	var parts []string
	if len(h.Failing) > 0 {
		names := h.Failing
		if len(names) > 10 {
			names = append(names[:10:10], fmt.Sprintf("and %d more", len(h.Failing)-10))
		}
		parts = append(parts, fmt.Sprintf("%d of %d parents not healthy: %s", len(h.Failing), h.Members, strings.Join(names, "; ")))
	}
	if h.CheckErr != nil {
		parts = append(parts, "healthy: "+h.CheckErr.Error())
	} else if !h.Check {
		parts = append(parts, "healthy is false")
	}
	return strings.Join(parts, "; ")
}

// Next is the state a Progressing rollout moves to, seen healthy as h at now, and
// whether it changed. A healthy step waits out the pause and then the next step begins
// (or the rollout is Complete after the last); a step not healthy by its deadline
// pauses or rolls back with a message naming why.
func Next(s State, p Policy, h Health, now time.Time) (State, bool) {
	if s.Phase != Progressing {
		return s, false
	}
	now = now.UTC().Truncate(time.Second)
	if !h.Healthy() {
		if now.Sub(s.StepStarted) >= p.ProgressDeadline {
			s.Phase = Paused
			if p.Rollback {
				s.Phase = RolledBack
			}
			s.HealthySince = time.Time{}
			s.Message = fmt.Sprintf("step %d (%s) not healthy within %s: %s", s.Step, percent(p.Steps, s.Step), p.ProgressDeadline, h.why())
			return s, true
		}
		if !s.HealthySince.IsZero() {
			s.HealthySince = time.Time{} // the pause starts again once healthy again
			return s, true
		}
		return s, false
	}
	changed := false
	if s.HealthySince.IsZero() {
		s.HealthySince, changed = now, true
	}
	if now.Sub(s.HealthySince) < p.Pause {
		return s, changed
	}
	if s.Step >= len(p.Steps) {
		return State{Phase: Complete, Step: s.Step, From: s.From, Steps: s.Steps}, true
	}
	s.Step++
	s.StepStarted, s.HealthySince, s.Message = now, time.Time{}, ""
	return s, true
}

// Due is how long after now a rollout in state s must be looked at again even when none
// of its parents changes: when the pause of its healthy step ends, or else its step's
// deadline. It is 0 when the rollout is not Progressing: nothing is due.
func Due(s State, p Policy, now time.Time) time.Duration {
	if s.Phase != Progressing {
		return 0
	}
	at := s.StepStarted.Add(p.ProgressDeadline)
	if !s.HealthySince.IsZero() {
		at = s.HealthySince.Add(p.Pause)
	}
	// States keep whole seconds: a look a second later cannot come too early.
	return max(at.Sub(now)+time.Second, time.Second)
}

// percent names step n (1-based) of steps.
func percent(steps []float64, n int) string {
	if n < 1 || n > len(steps) {
		return "?"
	}
	return fmt.Sprintf("%g%%", steps[n-1])
}
