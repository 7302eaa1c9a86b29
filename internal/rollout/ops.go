package rollout

import (
	"fmt"
	"time"
)

// The operations of `kubecel rollout`, on a rule's current revision. Each returns the
// state to write, or an error saying why the operation does not apply.

// Pause stops a rollout under way from taking further steps.
func Pause(cur *Revision) (State, error) {
	if cur == nil {
		return State{}, errNoRevision
	}
	if cur.Phase != Progressing {
		return State{}, fmt.Errorf("revision %d is %s: only a Progressing rollout can be paused", cur.Number, cur.Phase)
	}
	s := cur.State
	s.Phase, s.HealthySince, s.Message = Paused, time.Time{}, "paused by kubecel rollout pause"
	return s, nil
}

// Resume lets a paused rollout go on; its step's deadline starts again.
func Resume(cur *Revision, now time.Time) (State, error) {
	if cur == nil {
		return State{}, errNoRevision
	}
	if cur.Phase != Paused {
		return State{}, fmt.Errorf("revision %d is %s: only a Paused rollout can be resumed", cur.Number, cur.Phase)
	}
	s := cur.State
	s.Phase, s.StepStarted, s.HealthySince, s.Message = Progressing, now.UTC().Truncate(time.Second), time.Time{}, ""
	return s, nil
}

// Undo sends every parent back to the revision the current one rolled from, and holds
// the rule there until its text changes.
func Undo(cur *Revision, revs []*Revision) (State, error) {
	if cur == nil {
		return State{}, errNoRevision
	}
	switch {
	case cur.Phase == RolledBack:
		to := cur.From
		if from := Find(revs, cur.From); from != nil {
			to = fmt.Sprintf("revision %d (%s)", from.Number, from.Hash)
		}
		return State{}, fmt.Errorf("revision %d was already rolled back to %s: edit the rules to roll forward", cur.Number, to)
	case cur.From == "":
		return State{}, fmt.Errorf("revision %d is the rule's first: there is no earlier revision to go back to", cur.Number)
	}
	from := Find(revs, cur.From)
	if from == nil {
		return State{}, fmt.Errorf("revision %d rolled from %s, which is no longer stored", cur.Number, cur.From)
	}
	s := cur.State
	s.Phase, s.HealthySince = RolledBack, time.Time{}
	s.Message = fmt.Sprintf("undone by kubecel rollout undo: every parent is back at revision %d (%s)", from.Number, from.Hash)
	return s, nil
}

var errNoRevision = fmt.Errorf("the rule has no stored revision: it never ran, or runs under another installation")
