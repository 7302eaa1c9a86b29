package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/engine/plan"
)

// PlanOptions selects the parents Plan covers. The zero value selects all.
type PlanOptions struct {
	Rule      string
	Namespace string
}

// Plan runs the reconcile of every parent of every running rule once, without writing:
// the controller must be built with Options.DryRun and its rules set (SetRules); Run
// need not run. Objects that carry a rule's labels in kinds the rule no longer produces
// are watched too, so that their prunes are planned as a running controller that
// reloads the rules would prune them. Plan waits for the caches to sync. The result is
// in a stable order (rule, namespace, name). It fails when a selected rule is not
// running (its kinds are not served, or permissions are missing), with one line per such
// rule that says why.
func (c *Controller) Plan(ctx context.Context, opts PlanOptions) ([]plan.ParentPlan, error) {
	if !c.opts.DryRun {
		return nil, errors.New("plan needs a dry-run controller (Options.DryRun)")
	}
	v := c.view.Load()
	var states []*watch.Rule
	for name, rr := range v.running {
		if opts.Rule == "" || opts.Rule == name {
			states = append(states, rr.st)
		}
	}
	var pending []string
	for name, p := range v.pending {
		if p.wouldCreate {
			continue // no parents before its CRD exists; Controller.APIs reports the CRD
		}
		if opts.Rule == "" || opts.Rule == name {
			pending = append(pending, fmt.Sprintf("rule %q is not running: %s", name, p.reason))
		}
	}
	slices.SortFunc(states, func(a, b *watch.Rule) int { return cmp.Compare(a.Rule.Name, b.Rule.Name) })
	names := make([]string, 0, len(states))
	for _, st := range states {
		names = append(names, st.Rule.Name)
	}
	if err := c.watchLeftovers(ctx, names); err != nil {
		return nil, err
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return !slices.ContainsFunc(states, func(st *watch.Rule) bool { return !st.Synced() }), nil
	})
	if err != nil {
		return nil, fmt.Errorf("wait for the caches of %s: %w", strings.Join(names, ", "), err)
	}
	var plans []plan.ParentPlan
	for _, st := range states {
		parents, err := st.Parents(opts.Namespace)
		if err != nil {
			return nil, err
		}
		for _, parent := range parents {
			pp := c.reconciler.Plan(ctx, st, servedAs(st, parent))
			pp.Canary = st.Rule.Rollout.IsCanary(parent.GetNamespace(), parent.GetLabels())
			plans = append(plans, pp)
		}
	}
	if len(pending) > 0 {
		slices.Sort(pending)
		return plans, errors.New(strings.Join(pending, "\n"))
	}
	return plans, nil
}

// Close stops every watch of a controller whose Run was never called (Run stops them
// itself when its context ends).
func (c *Controller) Close() {
	c.queue.ShutDown()
	c.life.stopAll()
	c.events.Shutdown()
}
