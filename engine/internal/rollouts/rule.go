package rollouts

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/internal/rollout"
)

// Rule is the rollout state of one running rule: its version from the rules (the
// target), the version a rollout under way rolls from (stable), the stored revision as
// last seen and the parents moved so far. The workers read it through Pick without a
// lock; the rollouts' worker alone changes it.
type Rule struct {
	target *watch.Rule
	// stable is the version the rollout rolls from, running beside the target; nil
	// when every parent is at the target.
	stable atomic.Pointer[watch.Rule]
	// rev is the target's stored revision as last seen (in memory only in a dry run).
	rev atomic.Pointer[rollout.Revision]
	// members are the parents at the target while the rollout is under way; nil before
	// the worker first looked at the parents.
	members atomic.Pointer[map[watch.Key]struct{}]

	// lookMu guards seen, what the worker read of each parent (look.go): the worker
	// and the metrics' scrape both look.
	lookMu sync.Mutex
	seen   map[watch.Key]parentSeen

	// started is when the rule started, which bounds how long its first revision waits
	// to be stored.
	started time.Time
}

// NewRule is the rollout state of target at revision rev, rolling from stable (nil when
// every parent is at the target).
func NewRule(target, stable *watch.Rule, rev *rollout.Revision) *Rule {
	r := &Rule{target: target, seen: map[watch.Key]parentSeen{}, started: time.Now()}
	r.rev.Store(rev)
	r.stable.Store(stable)
	return r
}

// Target is the rule's version from the rules.
func (r *Rule) Target() *watch.Rule { return r.target }

// Stable is the version the rollout rolls from, nil when there is none.
func (r *Rule) Stable() *watch.Rule { return r.stable.Load() }

// StopStable takes the version the rollout rolls from out of the rule, and reports
// whether it was stable (so that the caller stops it once).
func (r *Rule) StopStable(stable *watch.Rule) bool { return r.stable.CompareAndSwap(stable, nil) }

// Revision is the stored revision as last seen.
func (r *Rule) Revision() *rollout.Revision { return r.rev.Load() }

// Pick is the version of the rule a parent's reconcile runs. A parent that the version
// rolled from does not select (its namespaces or label selector leave it out: a parent
// that the edit brings in) runs the target in every phase, since no other version would
// serve it; the others run what their step says.
func (r *Rule) Pick(key watch.Key) *watch.Rule {
	stable := r.stable.Load()
	if stable == nil {
		return r.target
	}
	parent, held, _ := r.target.Get(key)
	if held && !stable.Selects(parent) {
		return r.target
	}
	switch r.Revision().Phase {
	case rollout.RolledBack:
		return stable
	case rollout.Progressing, rollout.Paused:
		m := r.members.Load()
		if m == nil {
			// The worker has not looked at the parents yet (the rule just started): a
			// parent already at the new revision stays there, the others wait for it.
			t := r.target.Rule
			if held && rollout.RevisionOf(parent, t.Name) == t.Revision {
				return r.target
			}
			return stable
		}
		if _, ok := (*m)[key]; ok {
			return r.target
		}
		return stable
	}
	return r.target
}

// RollsFrom reports whether the rule's rollout is under way from the revision that old
// ran: the parents the steps have not reached stay as old left them, so they need no
// reconcile (the rollout queues the members).
func (r *Rule) RollsFrom(old *watch.Rule) bool {
	stable := r.stable.Load()
	return stable != nil && stable.Rule.Revision == old.Rule.Revision && r.Revision().Phase == rollout.Progressing
}
