package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/rules"
)

// A rule's revisions and rollouts (package rollout keeps them in the cluster). While a
// rollout is under way two versions of a rule run: the target (the rules file's
// revision, the rule table's running rule) and the stable revision it rolls from,
// compiled from the stored revision. The loop hands each parent's reconcile the version
// its step says (pick); the rollout's tick (rollout_tick.go) takes the steps.

// ruleRollout is the rollout state of one running rule.
type ruleRollout struct {
	target *watch.Rule
	// stable is the version the rollout rolls from, running beside the target; nil
	// when every parent is at the target.
	stable atomic.Pointer[watch.Rule]
	// rev is the target's stored revision as last seen (in memory only in a dry run).
	rev atomic.Pointer[rollout.Revision]
	// members are the parents at the target while the rollout is under way.
	members atomic.Pointer[map[watch.Key]struct{}]
	// seen caches what the tick read of each parent, by key (rollout_tick.go).
	lookMu sync.Mutex
	seen   map[watch.Key]parentSeen
}

// revision is the stored revision as last seen.
func (rr *ruleRollout) revision() *rollout.Revision { return rr.rev.Load() }

// pick is the version of the rule a parent's reconcile runs.
func (rr *ruleRollout) pick(key watch.Key) *watch.Rule {
	stable := rr.stable.Load()
	if stable == nil {
		return rr.target
	}
	switch rr.revision().Phase {
	case rollout.RolledBack:
		return stable
	case rollout.Progressing, rollout.Paused:
		m := rr.members.Load()
		if m == nil {
			// The tick has not looked at the parents yet (the rule just started): a
			// parent already at the new revision stays there, the others wait for it.
			r := rr.target.Rule
			if u, ok, _ := rr.target.Get(key); ok && rollout.RevisionOf(u, r.SyncedCondition) == r.Revision {
				return rr.target
			}
			return stable
		}
		if _, ok := (*m)[key]; ok {
			return rr.target
		}
		return stable
	}
	return rr.target
}

// prepared is what starting a rule takes for its revisions: the change to store once
// it runs, and the stable version's rule to run beside it.
type prepared struct {
	change  rollout.Change
	changed bool
	revs    []*rollout.Revision
	stable  *rules.Rule
	// rev is the revision the rule runs at once the change is stored.
	rev *rollout.Revision
}

// revisions are the rule table's view of the revisions in the cluster.
type revisions struct {
	store    *rollout.Store // nil: revisions are not kept (Options.RevisionNamespace "")
	lister   appslisters.ControllerRevisionNamespaceLister
	recorder record.EventRecorder // nil in a dry run
	dryRun   bool
	keep     int
}

// event records an Event on a stored revision.
func (v *revisions) event(rev *rollout.Revision, eventType, reason, message string) {
	if v.recorder != nil && rev.Object != nil {
		v.recorder.Event(rev.Object, eventType, reason, message)
	}
}

// prepare reads a rule's stored revisions and decides what making r its current
// revision takes; it compiles the stable revision when the rollout needs one. It writes
// nothing.
func (v *revisions) prepare(ctx context.Context, rs *rules.RuleSet, r *rules.Rule) (*prepared, error) {
	if v.store == nil {
		// Without revisions a rule runs its one version; a rule with a rollout policy
		// then cannot run, but in a dry run (kubecel plan) that is what is planned.
		if r.Rollout != nil && !v.dryRun {
			return nil, fmt.Errorf("rule %q has a rollout policy but the controller keeps no revisions (no namespace for them)", r.Name)
		}
		return &prepared{}, nil
	}
	revs, err := v.store.List(ctx, r.Name)
	if err != nil {
		return nil, err
	}
	p := &prepared{revs: revs}
	p.change, p.changed = rollout.Start(revs, r.Revision, r.Rollout != nil, time.Now())
	if p.changed {
		p.rev = &rollout.Revision{Rule: r.Name, Hash: r.Revision, Number: p.change.Number, State: p.change.State, Document: r.Document}
		if p.change.Update != nil {
			p.rev.Object = p.change.Update.Object
		}
	} else if cur := rollout.Find(revs, r.Revision); !slices.Equal(cur.Steps, steps(r)) {
		// A policy edit alone makes no revision, but the stored one keeps the policy's
		// steps: they say whether its parents name it in their Synced condition.
		p.change, p.changed = rollout.Change{Update: cur, Number: cur.Number}, true
		rev := *cur
		p.rev = &rev
	} else {
		p.rev = cur
	}
	if p.changed {
		p.rev.Steps = steps(r)
	}
	if p.rev.Phase == rollout.Complete {
		return p, nil
	}
	from := rollout.Find(revs, p.rev.From)
	switch {
	case from == nil:
		return nil, fmt.Errorf("rule %q: revision %s rolls from revision %s, which is not stored", r.Name, r.Revision, p.rev.From)
	case !from.Proven:
		return nil, fmt.Errorf("rule %q: stored revision %d (%s) does not carry this installation's proof; it was not written by this installation and is not run", r.Name, from.Number, from.Hash)
	}
	if p.stable, err = StableVersion(rs, r, from); err != nil {
		return nil, err
	}
	return p, nil
}

// steps are a rule's rollout steps, nil without a policy.
func steps(r *rules.Rule) []float64 {
	if r.Rollout == nil {
		return nil
	}
	return r.Rollout.Steps
}

// commit stores what prepare decided, once the rule runs. Another replica that stored
// it first wins: its revision is read back. In a dry run nothing is written.
func (v *revisions) commit(ctx context.Context, r *rules.Rule, p *prepared, where rollout.Where) *rollout.Revision {
	if v.store == nil || !p.changed || v.dryRun {
		return p.rev
	}
	logger := klog.FromContext(ctx).WithValues("rule", r.Name, "revision", r.Revision)
	for _, old := range p.change.Supersede {
		st := old.State
		st.Phase, st.Message = rollout.Superseded, fmt.Sprintf("superseded by revision %d (%s)", p.change.Number, r.Revision)
		if _, err := v.store.Update(ctx, old, old.Number, st); err != nil {
			logger.Error(err, "Cannot mark a rollout superseded", "superseded", old.Hash)
		}
	}
	var got *rollout.Revision
	var err error
	if p.change.Create {
		got, err = v.store.Create(ctx, r.Name, r.Revision, r.Document, where, p.change.Number, p.rev.State)
	} else {
		got, err = v.store.Update(ctx, p.change.Update, p.change.Number, p.rev.State)
	}
	if err != nil {
		if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
			logger.V(1).Info("Another replica stored the revision first", "reason", err.Error())
		} else {
			logger.Error(err, "Cannot store the rule's revision; the rollout's tick tries again")
		}
		return p.rev
	}
	if err := v.store.Trim(ctx, append(p.revs, got), v.keep, got.Hash, got.From); err != nil {
		logger.Error(err, "Cannot delete old revisions")
	}
	logger.Info("Stored rule revision", "number", got.Number, "phase", got.Phase, "from", got.From)
	return got
}

// whereOf says where a rule's parents are, for the commands.
func whereOf(st *watch.Rule) rollout.Where {
	gvr := st.ParentKind.GVR
	return rollout.Where{
		ParentResource: gvr.Group + "/" + gvr.Version + "/" + gvr.Resource,
		ReadyCondition: st.Rule.ReadyCondition, SyncedCondition: st.Rule.SyncedCondition,
	}
}

// rollsFrom reports whether the rule's rollout under way (next's) rolls from the
// revision that old ran: the parents the steps have not reached stay as old left them,
// so they need no reconcile (the tick queues the members).
func rollsFrom(next *runningRule, old *watch.Rule) bool {
	rr := next.rollout
	if rr == nil {
		return false
	}
	stable := rr.stable.Load()
	return stable != nil && stable.Rule.Revision == old.Rule.Revision && rr.revision().Phase == rollout.Progressing
}
