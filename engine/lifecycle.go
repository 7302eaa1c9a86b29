package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/access"
	"github.com/kubecel/kubecel/engine/internal/apis"
	"github.com/kubecel/kubecel/engine/internal/metrics"
	"github.com/kubecel/kubecel/engine/internal/reconcile"
	"github.com/kubecel/kubecel/engine/internal/rollouts"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/rules"
)

// lifecycle is the rule lifecycle: which rules run, which wait and why. A rule set is
// applied by starting the rules that are new or changed and stopping those that are
// gone; a rule whose kinds are not served yet, or whose permissions are missing, waits
// (pending.go) and starts by itself once it can.
//
// Its operations send requests to the API server (discovery, access reviews, the
// rules' revisions) while they hold mu, which serialises them; nothing else takes mu.
// An operation starts its rules at once (starting.go), each permission asked once
// (engine/internal/access), then applies the results in the order of the rules' names.
// Each operation ends by publishing a new ruleView, which the rest of the controller
// reads without a lock. A version that an operation replaces or stops is stopped only
// after the view without it is published, and a changed rule's new version holds its
// watches before the old version's are released.
type lifecycle struct {
	opts       *Options
	kube       kubernetes.Interface // for access reviews
	watcher    *watch.Watcher
	reconciler *reconcile.Reconciler
	metrics    *metrics.Metrics
	enqueue    func(queueKey)
	gate       gate
	view       *atomic.Pointer[ruleView]

	// apis keeps the CRDs the rules' api blocks define (apis.go).
	apis *apis.Manager

	// revs keeps the rules' revisions in the cluster; rollouts takes their steps.
	revs     *rollouts.Revisions
	rollouts *rollouts.Controller

	mu      sync.Mutex
	running map[string]*runningRule
	pending map[string]*pendingRule
	loaded  bool
	// starting names the rules of a first start that are not published yet
	// (startEarly); nil otherwise.
	starting map[string]bool
	// rs is the rule set running rules come from (stable revisions compile in it).
	rs *rules.RuleSet
	// beforeStart and started, when set (by tests), are called before a rule starts in
	// set and once it started, before the view with it is published (startAll says from
	// which goroutine).
	beforeStart func(rule string)
	started     func(st *watch.Rule)
}

// publish makes the lifecycle's state the view the controller reads. The caller holds
// l.mu.
func (l *lifecycle) publish() {
	l.view.Store(&ruleView{running: maps.Clone(l.running), pending: maps.Clone(l.pending), starting: l.starting, loaded: l.loaded})
	l.metrics.ActiveRules.Set(float64(len(l.running)))
	l.metrics.PendingRules.Set(float64(len(l.pending)))
}

// set replaces the running rule set. Only rules whose fingerprint changed are
// restarted, all at once (startAll); rules whose kinds are not served yet wait and start
// by themselves.
func (l *lifecycle) set(ctx context.Context, rs *rules.RuleSet) {
	logger := klog.FromContext(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rs = rs
	wanted := map[string]*rules.Rule{}
	for _, r := range rs.Rules {
		wanted[r.Name] = r
	}
	var removed, replaced, started []*runningRule
	var requeue []*watch.Rule
	for _, name := range slices.Sorted(maps.Keys(l.running)) {
		if _, ok := wanted[name]; !ok {
			logger.Info("Stopping rule", "rule", name)
			removed = append(removed, l.running[name])
			delete(l.running, name)
		}
	}
	l.pending = map[string]*pendingRule{}
	var changed []*rules.Rule
	for name, r := range wanted {
		if old := l.running[name]; old == nil || old.st.Rule.Fingerprint != r.Fingerprint {
			changed = append(changed, r)
		}
	}
	jobs := startJobs(changed, func(name string) *runningRule { return l.running[name] })
	op := l.operation(ctx, len(jobs))
	if len(l.running) == 0 && len(removed) == 0 {
		// A first start publishes its rules as they start, so that the parents of
		// the first converge while the others start.
		jobs = l.startEarly(ctx, op, jobs)
	}
	l.startGroup(ctx, op, jobs, l.beforeStart, l.started)
	for _, j := range jobs {
		name, r, old, next := j.rule.Name, j.rule, j.old, j.next
		if err := j.err; err != nil {
			if old != nil && keepsOld(err) {
				// The last good version runs on; the new one waits.
				l.setPending(ctx, r, fmt.Errorf("the version that ran before keeps running, this one waits: %w", err))
				continue
			}
			l.setPending(ctx, r, err)
			if old != nil {
				delete(l.running, name)
				replaced = append(replaced, old)
			}
			continue
		}
		l.running[name] = next
		started = append(started, next)
		if old != nil {
			replaced = append(replaced, old)
			if !rollsFrom(next, old.st) {
				// Parents the new version no longer selects are released by it.
				requeue = append(requeue, old.st)
			}
		}
	}
	l.loaded = true
	l.publish()
	for _, rr := range removed {
		l.stopVersions(rr)
		l.releaseParents(ctx, rr.st) // after the stop: see releaseParents
	}
	for _, rr := range replaced {
		l.stopVersions(rr)
	}
	for _, st := range requeue {
		enqueueAll(l.enqueue, st)
	}
	// The watches of a started rule queued its parents as they started, before the
	// view had the rule: a worker that took one then found no rule (or the version
	// replaced) and let it go. Queued again, each is reconciled by the version published.
	for _, rr := range started {
		enqueueAll(l.enqueue, rr.st)
	}
	l.notice(started...)
}

// start resolves a rule's kinds, checks its permissions (with reviews, the operation's
// answers), starts its watches and reads (from listed, when not nil) or stores its
// revisions, and returns it
// running. old, when set, is the version being replaced: its child kinds stay watched.
// Nothing of old is stopped here.
func (l *lifecycle) start(ctx context.Context, reviews *access.Reviews, listed rollout.Listed, r *rules.Rule, old *runningRule) (*runningRule, error) {
	schema, err := l.ensureAPI(ctx, r)
	if err != nil {
		return nil, err
	}
	if old != nil && old.rollout != nil {
		// The version that runs may not have stored its first revision yet: stored now,
		// the edit rolls from it. The operation's list of revisions then lacks it.
		stored, err := l.revs.StoreFirst(ctx, old.rollout)
		if err != nil {
			return nil, err
		}
		if stored {
			listed = nil
		}
	}
	prep, err := l.revs.Prepare(ctx, l.rs, r, listed)
	if err != nil {
		return nil, err
	}
	var oldSt *watch.Rule
	if old != nil {
		oldSt = old.st
	}
	st, err := l.resolve(ctx, reviews, r, oldSt, false, schema, prep.Stable)
	if err != nil {
		return nil, err
	}
	var stable *watch.Rule
	if prep.Stable != nil {
		// The version the rollout rolls from runs beside the target, each watching the
		// child kinds of both, so that either can prune what the other made.
		if stable, err = l.resolve(ctx, reviews, prep.Stable, st, true, schema); err != nil {
			l.watcher.Stop(st)
			return nil, fmt.Errorf("the revision the rollout rolls from: %w", err)
		}
	}
	rev := l.revs.Commit(ctx, r, prep, st)
	if rev == nil {
		return &runningRule{st: st}, nil
	}
	return &runningRule{st: st, rollout: rollouts.NewRule(st, stable, rev)}, nil
}

// resolve resolves and starts one version of a rule, its child kinds joined by those
// of old and also; beside marks the version a rollout rolls from (watch.Rule.Beside),
// schema names the parent's schema where the rule defines it (watch.Rule.ParentSchema).
func (l *lifecycle) resolve(ctx context.Context, reviews *access.Reviews, r *rules.Rule, old *watch.Rule, beside bool, schema string, also ...*rules.Rule) (*watch.Rule, error) {
	st, err := l.watcher.Resolve(r, old, also...)
	if err != nil {
		return nil, err
	}
	st.Beside, st.ParentSchema = beside, schema
	// A rollout reads the parents of both versions on every replica (their revisions
	// and conditions): under sharding they stay whole in its caches.
	st.WholeParents = r.Rollout != nil || beside || slices.ContainsFunc(also, func(r *rules.Rule) bool { return r != nil })
	if reviews != nil {
		if err := reviews.Check(ctx, access.Permissions(st.Access())); err != nil {
			return nil, err
		}
	}
	if err := l.watcher.Start(ctx, st); err != nil {
		return nil, err
	}
	return st, nil
}

// stopVersions stops every running version of a rule that no view holds any more: the
// rule's and the one its rollout rolls from.
func (l *lifecycle) stopVersions(rr *runningRule) {
	l.watcher.Stop(rr.st)
	if rr.rollout != nil {
		if s := rr.rollout.Stable(); s != nil && rr.rollout.StopStable(s) {
			l.watcher.Stop(s)
		}
	}
	l.reconciler.ForgetRule(rr.st.Rule.Name)
}

// stopAll stops every running rule.
func (l *lifecycle) stopAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	stopped := l.running
	l.running = map[string]*runningRule{}
	l.publish()
	for _, rr := range stopped {
		l.stopVersions(rr)
	}
}

// restart starts a running rule again, as a reload of a changed rule does: its
// revisions are read again, and the revision it rolls from starts beside it. It does
// nothing when target is no longer the rule's running version.
func (l *lifecycle) restart(ctx context.Context, target *watch.Rule) {
	l.mu.Lock()
	defer l.mu.Unlock()
	name := target.Rule.Name
	cur := l.running[name]
	if cur == nil || cur.st != target {
		return // replaced or stopped meanwhile
	}
	next, err := l.start(ctx, l.reviews(), nil, cur.st.Rule, cur)
	if err != nil && keepsOld(err) {
		// Its api is refused now (someone changed the CRD): the version that runs keeps
		// running, as a reload leaves it.
		klog.FromContext(ctx).Error(err, "Cannot start the rule again; the version that runs keeps running", "rule", name)
		return
	}
	if err != nil {
		delete(l.running, name)
		l.setPending(ctx, cur.st.Rule, err)
		l.publish()
		l.stopVersions(cur)
		return
	}
	l.running[name] = next
	l.publish()
	l.stopVersions(cur)
	enqueueAll(l.enqueue, next.st)
	l.notice(next)
}

// notice tells the rollouts of the rules started, which have revisions.
func (l *lifecycle) notice(started ...*runningRule) {
	for _, rr := range started {
		if rr != nil && rr.rollout != nil {
			l.rollouts.Notice(rr.st.Rule.Name)
		}
	}
}

// rollsFrom reports whether the rule's rollout under way (next's) rolls from the
// revision that old ran (rollouts.Rule.RollsFrom).
func rollsFrom(next *runningRule, old *watch.Rule) bool {
	return next.rollout != nil && next.rollout.RollsFrom(old)
}

// enqueueAll queues every parent of a rule, as a resync does: those its caches hold,
// and those its children name, which may no longer be selected.
func enqueueAll(enqueue func(queueKey), st *watch.Rule) {
	for _, key := range st.ParentKeys() {
		enqueue(key)
	}
	for _, key := range st.ChildParentKeys() {
		enqueue(key)
	}
}
