package engine

import (
	"github.com/kubecel/kubecel/engine/internal/metrics"
	"github.com/kubecel/kubecel/engine/internal/rollouts"
	"github.com/kubecel/kubecel/engine/internal/watch"
)

// ruleView is what the rest of the controller reads of the rules: the running versions
// and the rules that wait. The rule lifecycle builds a new view after each change and
// publishes it whole (Controller.view); a view is never changed once published, so the
// workers, the event handlers and the metrics read it without a lock, and nothing they
// do waits on the lifecycle's requests to the API server.
type ruleView struct {
	running map[string]*runningRule
	pending map[string]*pendingRule
	// starting names the rules of the first rule set that are still starting while
	// others already run (lifecycle.startEarly): known, not running.
	starting map[string]bool
	// loaded is set once a first rule set was applied.
	loaded bool
}

// runningRule is a rule that runs: its version from the rules, and the state of its
// revisions (nil when the controller keeps none).
type runningRule struct {
	st      *watch.Rule
	rollout *rollouts.Rule
}

var emptyView = &ruleView{running: map[string]*runningRule{}, pending: map[string]*pendingRule{}}

// forKey returns the version of its rule that a parent's reconcile runs, or nil when
// the rule does not run.
func (v *ruleView) forKey(key watch.Key) *watch.Rule {
	rr := v.running[key.Rule]
	switch {
	case rr == nil:
		return nil
	case rr.rollout != nil:
		return rr.rollout.Pick(key)
	}
	return rr.st
}

// get returns the running rule of that name, or nil.
func (v *ruleView) get(name string) *watch.Rule {
	if rr := v.running[name]; rr != nil {
		return rr.st
	}
	return nil
}

// known reports whether a rule of that name runs, is starting or waits to run.
func (v *ruleView) known(name string) bool {
	return v.running[name] != nil || v.pending[name] != nil || v.starting[name]
}

// each calls fn for every running rule.
func (v *ruleView) each(fn func(*watch.Rule)) {
	for _, rr := range v.running {
		fn(rr.st)
	}
}

// rollouts are the rollout states of the running rules.
func (v *ruleView) rollouts() []*rollouts.Rule {
	var out []*rollouts.Rule
	for _, rr := range v.running {
		if rr.rollout != nil {
			out = append(out, rr.rollout)
		}
	}
	return out
}

// synced reports whether a rule set was applied and every running rule's caches have
// synced, with the names of the rules that wait.
func (v *ruleView) synced() (bool, []string) {
	pending := make([]string, 0, len(v.pending))
	for name := range v.pending {
		pending = append(pending, name)
	}
	if !v.loaded {
		return false, pending
	}
	for _, rr := range v.running {
		if !rr.st.Synced() {
			return false, pending
		}
	}
	return true, pending
}

// notReady reads the kubecel_parents_not_ready gauges of the running rules: a parent
// counts while its rule runs, its rule's cache holds it and this replica serves it.
func (c *Controller) notReady() []metrics.NotReady {
	v := c.view.Load()
	names := make([]string, 0, len(v.running))
	for name := range v.running {
		names = append(names, name)
	}
	g := gate{shard: c.opts.Shard}
	return c.reconciler.NotReady(names, func(key queueKey) bool {
		st := v.get(key.Rule)
		if st == nil || st.Stopped() || !g.serves(key) {
			return false
		}
		_, cached := st.ParentVersion(key)
		return cached
	})
}
