package engine

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/rules"
)

// The rollout's tick: every Options.RolloutTick it reads each running rule's stored
// revision from the cache of revisions, follows changes made elsewhere (another replica,
// `kubecel rollout`), moves the members of the steps taken to the target, and, on the
// replica whose turn it is to write, takes the next step once the current one is
// healthy. Every replica decides from the same stored state and the same parents, so
// they agree on the members; the writes of the state go on the version read, so a
// replica that lags loses a conflict and reads again.

// parentSeen is what the tick read of a parent at one resourceVersion.
type parentSeen struct {
	version string
	canary  bool
	// revision is the revision the parent is at ("" when unknown); at reports whether
	// it is the target; health says why it is not healthy there ("" when it is).
	revision string
	at       bool
	health   string
}

// look refreshes what the tick knows of the rule's parents and returns them in
// rollout order. It decodes only the parents that changed since the last tick.
func (rr *ruleRollout) look(ctx context.Context) ([]watch.Key, map[watch.Key]parentSeen) {
	rr.lookMu.Lock()
	defer rr.lookMu.Unlock()
	st, r := rr.target, rr.target.Rule
	keys := st.ParentKeys()
	fresh := make(map[watch.Key]parentSeen, len(keys))
	order := make([]rollout.Parent, 0, len(keys))
	byName := make(map[rollout.Parent]watch.Key, len(keys))
	for _, key := range keys {
		version, ok := st.ParentVersion(key)
		if !ok {
			continue
		}
		seen, ok := rr.seen[key]
		if !ok || seen.version != version {
			u, found, err := st.Get(key)
			if err != nil || !found {
				if err != nil {
					klog.FromContext(ctx).Error(err, "Cannot read a parent for the rollout", "rule", r.Name, "parent", key.String())
				}
				continue
			}
			seen = parentSeen{
				version:  version,
				canary:   u.GetLabels()[rollout.LabelCanary] == "true",
				revision: rollout.RevisionOf(u, r.SyncedCondition),
				health:   rollout.ParentHealth(u, r.ReadyCondition, r.SyncedCondition, r.Revision),
			}
			seen.at = seen.revision == r.Revision
		}
		fresh[key] = seen
		p := rollout.Parent{Namespace: key.Namespace, Name: key.Name, Canary: seen.canary}
		order = append(order, p)
		byName[p] = key
	}
	rr.seen = fresh
	rollout.Order(order)
	ordered := make([]watch.Key, len(order))
	for i, p := range order {
		ordered[i] = byName[p]
	}
	return ordered, fresh
}

// tickRollouts runs one tick of every running rule's rollout.
func (l *lifecycle) tickRollouts(ctx context.Context) {
	for _, rr := range l.view.Load().rollouts() {
		l.tickRollout(ctx, rr)
	}
}

// tickRollout runs one tick of a rule's rollout.
func (l *lifecycle) tickRollout(ctx context.Context, rr *ruleRollout) {
	r := rr.target.Rule
	logger := klog.FromContext(ctx).WithValues("rule", r.Name, "revision", r.Revision)
	rev := l.storedRevision(rr)
	if old := rr.revision(); rev != old {
		l.follow(ctx, rr, old, rev)
	}
	if rev.Object == nil && !l.opts.DryRun {
		// Storing the revision failed when the rule started: its state is written
		// nowhere yet, so no step is taken until it is stored.
		got, err := l.revs.store.Create(ctx, r.Name, r.Revision, r.Document, whereOf(rr.target), rev.Number, rev.State)
		switch {
		case err == nil:
			l.follow(ctx, rr, rev, got)
		case !apierrors.IsAlreadyExists(err):
			logger.Error(err, "Cannot store the rule's revision; the rollout waits for it")
		}
		return
	}
	stable := rr.stable.Load()
	if stable == nil {
		if rev.Phase == rollout.RolledBack && rev.From != "" {
			// An undo of a complete rollout: the revision it rolled from runs again.
			l.restart(ctx, rr.target)
		}
		return
	}
	switch rev.Phase {
	case rollout.Complete, rollout.Superseded:
		// Every parent at the target: the stable version's watches go.
		l.stopStable(rr, stable)
		rr.lookMu.Lock()
		rr.seen = nil
		rr.lookMu.Unlock()
		// The parents the steps did not reach (created since the last tick) move now.
		members := rr.members.Load()
		for _, key := range rr.target.ParentKeys() {
			if members == nil {
				l.enqueue(key)
			} else if _, ok := (*members)[key]; !ok {
				l.enqueue(key)
			}
		}
		logger.Info("Rollout complete", "number", rev.Number)
		return
	case rollout.RolledBack:
		return
	}
	if !rr.target.Synced() || !stable.Synced() {
		// Members from a cache still filling would leave out parents already at the new
		// revision; until then, each parent's own Synced condition decides (pick).
		return
	}
	ordered, seen := rr.look(ctx)
	m := rollout.Members(rev.Steps, rev.Step, len(ordered))
	members := make(map[watch.Key]struct{}, m)
	for i, key := range ordered {
		if i < m || seen[key].at {
			members[key] = struct{}{}
		}
	}
	before := rr.members.Load()
	rr.members.Store(&members)
	for key := range members {
		if before == nil {
			l.enqueue(key)
		} else if _, was := (*before)[key]; !was {
			l.enqueue(key)
		}
	}
	if rev.Phase != rollout.Progressing || r.Rollout == nil {
		return
	}
	h := rollout.Health{Members: m, Check: true}
	for _, key := range ordered[:m] {
		if s := seen[key]; s.health != "" {
			h.Failing = append(h.Failing, key.Namespace+"/"+key.Name+": "+s.health)
		}
	}
	if len(h.Failing) == 0 {
		h.Check, h.CheckErr = healthy(ctx, rr.target, ordered[:m])
	}
	next, changed := rollout.Next(rev.State, policy(r.Rollout), h, time.Now())
	if !changed {
		return
	}
	next.Steps = r.Rollout.Steps
	if l.opts.DryRun {
		return // a dry run takes no step: it shows the one the rollout is at
	}
	got, err := l.revs.store.Update(ctx, rev, rev.Number, next)
	switch {
	case apierrors.IsConflict(err):
		return // changed elsewhere: the next tick reads it
	case err != nil:
		logger.Error(err, "Cannot write the rollout's state")
		return
	}
	l.follow(ctx, rr, rev, got)
	l.rolloutChanged(ctx, rev, got)
	if got.Phase == rollout.Progressing && got.Step != rev.Step {
		// The next step's parents move now, not a tick later.
		l.tickRollout(ctx, rr)
	}
}

// follow makes after the rule's revision as last seen, and queues the parents a change
// of phase moves: when the rollout rolled back, those at the new revision (the tick of
// a Complete rollout queues the others when it stops the stable version).
func (l *lifecycle) follow(ctx context.Context, rr *ruleRollout, before, after *rollout.Revision) {
	rr.rev.Store(after)
	if after.Phase == rollout.RolledBack && before.Phase != rollout.RolledBack {
		klog.FromContext(ctx).Info("Rollout rolled back", "rule", after.Rule, "number", after.Number, "message", after.Message)
		// The parents at the new revision go back: the members of the steps taken, and
		// any other the last look saw there.
		moved := map[watch.Key]struct{}{}
		if m := rr.members.Load(); m != nil {
			moved = maps.Clone(*m)
		}
		rr.lookMu.Lock()
		for key, s := range rr.seen {
			if s.at {
				moved[key] = struct{}{}
			}
		}
		rr.lookMu.Unlock()
		if rr.members.Load() == nil && len(moved) == 0 {
			for _, key := range rr.target.ParentKeys() {
				moved[key] = struct{}{} // never looked: every parent, to be sure
			}
		}
		for key := range moved {
			l.enqueue(key)
		}
	}
}

// rolloutChanged logs and records what this replica's write of a rollout's state did.
func (l *lifecycle) rolloutChanged(ctx context.Context, before, after *rollout.Revision) {
	logger := klog.FromContext(ctx).WithValues("rule", after.Rule, "revision", after.Hash)
	switch {
	case after.Phase == rollout.Paused || after.Phase == rollout.RolledBack:
		logger.Error(nil, "Rollout step failed", "phase", after.Phase, "step", after.Step, "message", after.Message)
		l.revs.event(after, corev1.EventTypeWarning, "RolloutStepFailed", after.Message)
	case after.Phase == rollout.Complete:
		l.revs.event(after, corev1.EventTypeNormal, "RolloutComplete", fmt.Sprintf("every parent is at revision %d (%s)", after.Number, after.Hash))
	case after.Step != before.Step:
		logger.Info("Rollout step taken", "step", after.Step, "of", len(after.Steps))
		l.revs.event(after, corev1.EventTypeNormal, "RolloutStep", fmt.Sprintf("step %d of %d (%g%%) begins", after.Step, len(after.Steps), after.Steps[after.Step-1]))
	}
}

// storedRevision is the rule's revision as the cache of revisions holds it now, or the
// one last seen when the cache does not hold it (a dry run, or not stored yet).
func (l *lifecycle) storedRevision(rr *ruleRollout) *rollout.Revision {
	last := rr.revision()
	if l.revs.lister == nil || l.opts.DryRun {
		return last
	}
	cr, err := l.revs.lister.Get(rollout.Name(l.revs.store.Installation, last.Rule, last.Hash))
	if err != nil || last.Object != nil && !newer(cr.ResourceVersion, last.Object.ResourceVersion) {
		// The cache lags behind this replica's own last write, or holds what it read.
		return last
	}
	revs, err := l.revs.store.Decode([]*appsv1.ControllerRevision{cr})
	if err != nil || len(revs) != 1 {
		return last
	}
	return revs[0]
}

// newer reports whether resourceVersion a is later than b. The API server's are etcd
// revisions, which only grow; should one not be a number, any difference counts.
func newer(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return a != b
	}
	return x > y
}

// healthy evaluates the rule's `healthy` over the members of the steps taken, read from
// the cache (decoded only here: once every member is healthy).
func healthy(ctx context.Context, st *watch.Rule, members []watch.Key) (bool, error) {
	objects := make([]map[string]any, 0, len(members))
	for _, key := range members {
		u, found, err := st.Get(key)
		if err != nil {
			return false, err
		}
		if found {
			objects = append(objects, u.Object)
		}
	}
	return st.Rule.Rollout.Healthy(ctx, objects)
}

// policy is a rule's rollout policy as package rollout reads it.
func policy(ro *rules.Rollout) rollout.Policy {
	return rollout.Policy{Steps: ro.Steps, Pause: ro.Pause, ProgressDeadline: ro.ProgressDeadline, Rollback: ro.OnFailure == rules.OnFailureRollback}
}
