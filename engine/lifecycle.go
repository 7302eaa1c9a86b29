package engine

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/metrics"
	"github.com/kubecel/kubecel/engine/internal/reconcile"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/rules"
)

// ruleTable is the rule lifecycle: which rules run, which wait and why. A rule set is
// applied by starting the rules that are new or changed (a changed rule's new version
// takes over its old watches before they are released) and stopping those that are
// gone; a rule whose kinds are not served yet, or whose permissions are missing, waits
// (pending.go) and starts by itself once it can.
type ruleTable struct {
	opts       *Options
	kube       kubernetes.Interface // for access reviews
	watcher    *watch.Watcher
	reconciler *reconcile.Reconciler
	metrics    *metrics.Metrics
	enqueue    func(queueKey)
	gate       gate

	// revs keeps the rules' revisions in the cluster (rollout.go).
	revs *revisions

	mu      sync.RWMutex
	running map[string]*watch.Rule
	pending map[string]*pendingRule
	loaded  bool
	// rs is the rule set running rules come from (stable revisions compile in it);
	// rollouts hold the revision state of running rules, by name.
	rs       *rules.RuleSet
	rollouts map[string]*ruleRollout
}

// forKey returns the version of its rule that a parent's reconcile runs, or nil when
// the rule does not run.
func (t *ruleTable) forKey(key watch.Key) *watch.Rule {
	t.mu.RLock()
	defer t.mu.RUnlock()
	st := t.running[key.Rule]
	if rr := t.rollouts[key.Rule]; st != nil && rr != nil && rr.target == st {
		return rr.pick(key)
	}
	return st
}

// get returns the running rule of that name, or nil.
func (t *ruleTable) get(name string) *watch.Rule {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.running[name]
}

// known reports whether a rule of that name runs or waits to run.
func (t *ruleTable) known(name string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.running[name] != nil || t.pending[name] != nil
}

// each calls fn for every running rule, under the table's read lock.
func (t *ruleTable) each(fn func(*watch.Rule)) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, st := range t.running {
		fn(st)
	}
}

// set replaces the running rule set. Only rules whose fingerprint changed are
// restarted; rules whose kinds are not served yet wait and start by themselves.
func (t *ruleTable) set(ctx context.Context, rs *rules.RuleSet) {
	logger := klog.FromContext(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rs = rs
	wanted := map[string]*rules.Rule{}
	for _, r := range rs.Rules {
		wanted[r.Name] = r
	}
	for name, st := range t.running {
		if _, ok := wanted[name]; !ok {
			logger.Info("Stopping rule", "rule", name)
			t.stopLocked(st)
			t.releaseParents(ctx, st) // after the stop: see releaseParents
		}
		// A changed rule keeps its old watches alive until the new version holds them.
	}
	t.pending = map[string]*pendingRule{}
	for name, r := range wanted {
		old := t.running[name]
		if old != nil && old.Rule.Fingerprint == r.Fingerprint {
			continue
		}
		if err := t.startLocked(ctx, r, old); err != nil {
			t.setPending(ctx, r, err)
		} else if old != nil && !t.rollsFromLocked(r.Name, old) {
			// Parents the new version no longer selects are released by it.
			enqueueAll(t.enqueue, old)
		}
		if old != nil {
			t.stopLocked(old)
		}
	}
	t.loaded = true
	t.updateGauges()
}

// startLocked resolves the rule's kinds, checks its permissions, starts its watches and
// makes it the running version. old, when set, is the version being replaced: its child
// kinds stay watched.
func (t *ruleTable) startLocked(ctx context.Context, r *rules.Rule, old *watch.Rule) error {
	prep, err := t.revs.prepare(ctx, t.rs, r)
	if err != nil {
		return err
	}
	st, err := t.resolve(ctx, r, old, false, prep.stable)
	if err != nil {
		return err
	}
	var stable *watch.Rule
	if prep.stable != nil {
		// The version the rollout rolls from runs beside the target, each watching the
		// child kinds of both, so that either can prune what the other made.
		if stable, err = t.resolve(ctx, prep.stable, st, true); err != nil {
			t.watcher.Stop(st)
			return fmt.Errorf("the revision the rollout rolls from: %w", err)
		}
	}
	t.running[r.Name] = st
	if prev := t.rollouts[r.Name]; prev != nil {
		if s := prev.stable.Swap(nil); s != nil {
			t.watcher.Stop(s)
		}
	}
	rr := &ruleRollout{target: st, rev: t.revs.commit(ctx, r, prep, whereOf(st)), seen: map[watch.Key]parentSeen{}}
	if rr.rev == nil {
		delete(t.rollouts, r.Name)
		return nil
	}
	rr.stable.Store(stable)
	t.rollouts[r.Name] = rr
	return nil
}

// resolve resolves and starts one version of a rule, its child kinds joined by those
// of old and also; beside marks the version a rollout rolls from (watch.Rule.Beside).
func (t *ruleTable) resolve(ctx context.Context, r *rules.Rule, old *watch.Rule, beside bool, also ...*rules.Rule) (*watch.Rule, error) {
	st, err := t.watcher.Resolve(r, old, also...)
	if err != nil {
		return nil, err
	}
	st.Beside = beside
	if !t.opts.SkipAccessCheck {
		if err := checkAccess(ctx, t.kube, st); err != nil {
			return nil, err
		}
	}
	if err := t.watcher.Start(ctx, st); err != nil {
		return nil, err
	}
	return st, nil
}

// stopLocked stops a running rule and forgets it.
func (t *ruleTable) stopLocked(st *watch.Rule) {
	t.watcher.Stop(st)
	if rr := t.rollouts[st.Rule.Name]; rr != nil && rr.target == st {
		if s := rr.stable.Swap(nil); s != nil {
			t.watcher.Stop(s)
		}
		delete(t.rollouts, st.Rule.Name)
	}
	t.reconciler.ForgetRule(st.Rule.Name)
	if t.running[st.Rule.Name] == st {
		delete(t.running, st.Rule.Name)
	}
}

// stopAll stops every running rule.
func (t *ruleTable) stopAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, st := range t.running {
		t.stopLocked(st)
	}
}

func (t *ruleTable) updateGauges() {
	t.metrics.ActiveRules.Set(float64(len(t.running)))
	t.metrics.PendingRules.Set(float64(len(t.pending)))
}

// enqueueAll queues every parent of a rule, as a resync does.
func enqueueAll(enqueue func(queueKey), st *watch.Rule) {
	for _, key := range st.ParentKeys() {
		enqueue(key)
	}
}

// notReady reads the kubecel_parents_not_ready gauges of the running rules: a parent
// counts while its rule runs, its rule's cache holds it and this replica serves it.
func (t *ruleTable) notReady() []metrics.NotReady {
	t.mu.RLock()
	defer t.mu.RUnlock()
	names := make([]string, 0, len(t.running))
	for name := range t.running {
		names = append(names, name)
	}
	return t.reconciler.NotReady(names, func(key queueKey) bool {
		st := t.running[key.Rule]
		return st != nil && !st.Stopped() && t.gate.serves(key) && st.HasParent(key)
	})
}
