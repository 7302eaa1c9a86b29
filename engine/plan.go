package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/compare"
	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/engine/plan"
)

func refOf(obj *unstructured.Unstructured) plan.ObjectRef {
	return plan.ObjectRef{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// newChange records a write: live is the object before (nil when it does not exist),
// got the server's response (nil for a prune). It returns false when the write changes
// nothing a reader can see (for example an apply that only takes ownership of fields).
func newChange(action plan.Action, child string, live, got *unstructured.Unstructured) (plan.Change, bool) {
	ref := live
	if ref == nil {
		ref = got
	}
	ch := plan.Change{Action: action, Child: child, Object: refOf(ref)}
	switch action {
	case plan.ActionPrune, plan.ActionRelease:
		return ch, true
	case plan.ActionStatus:
		ch.Fields = compare.Diff(live, got, "status")
	case plan.ActionFinalizer:
		ch.Fields = compare.Diff(live, got, "metadata")
		ch.Fields = slices.DeleteFunc(ch.Fields, func(f plan.FieldChange) bool { return !strings.HasPrefix(f.Path, "metadata.finalizers") })
	default:
		ch.Fields = compare.Diff(live, got, "")
	}
	return ch, action == plan.ActionCreate || len(ch.Fields) > 0
}

// write is one write of a reconcile, kept as sent so that the diff is computed only
// when someone reads it (plan, run --dry-run), not at every write of the controller.
type write struct {
	action    plan.Action
	child     string
	live, got *unstructured.Unstructured
}

// record adds a write to the reconcile's outcome. live and got must not change later.
func (o *outcome) record(action plan.Action, child string, live, got *unstructured.Unstructured) {
	o.writes = append(o.writes, write{action: action, child: child, live: live, got: got})
}

// changes returns the reconcile's writes that change something a reader can see.
func (o *outcome) changes() []plan.Change {
	var out []plan.Change
	for _, w := range o.writes {
		if ch, ok := newChange(w.action, w.child, w.live, w.got); ok {
			out = append(out, ch)
		}
	}
	return out
}

// logPlan logs each change of a dry-run reconcile, one line per change with the diff.
func logPlan(ctx context.Context, changes []plan.Change) {
	logger := klog.FromContext(ctx)
	for _, ch := range changes {
		logger.Info("Planned change", "child", ch.Child, "action", string(ch.Action), "object", ch.Object.String(), "diff", ch.Text())
	}
}

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
	c.mu.RLock()
	var states []*ruleState
	for name, st := range c.rules {
		if opts.Rule == "" || opts.Rule == name {
			states = append(states, st)
		}
	}
	var pending []string
	for name, p := range c.pending {
		if opts.Rule == "" || opts.Rule == name {
			pending = append(pending, fmt.Sprintf("rule %q is not running: %s", name, p.reason))
		}
	}
	c.mu.RUnlock()
	slices.SortFunc(states, func(a, b *ruleState) int { return cmp.Compare(a.rule.Name, b.rule.Name) })
	names := make([]string, 0, len(states))
	for _, st := range states {
		names = append(names, st.rule.Name)
	}
	if err := c.watchLeftovers(ctx, names); err != nil {
		return nil, err
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		return !slices.ContainsFunc(states, func(st *ruleState) bool { return !st.synced() }), nil
	})
	if err != nil {
		return nil, fmt.Errorf("wait for the caches of %s: %w", strings.Join(names, ", "), err)
	}
	var plans []plan.ParentPlan
	for _, st := range states {
		parents, err := st.listParents(opts.Namespace)
		if err != nil {
			return nil, err
		}
		for _, parent := range parents {
			plans = append(plans, c.planParent(ctx, st, parent))
		}
	}
	if len(pending) > 0 {
		slices.Sort(pending)
		return plans, errors.New(strings.Join(pending, "\n"))
	}
	return plans, nil
}

func (c *Controller) planParent(ctx context.Context, st *ruleState, parent *unstructured.Unstructured) plan.ParentPlan {
	p := plan.ParentPlan{Rule: st.rule.Name, Parent: refOf(parent)}
	if parent.GetDeletionTimestamp() != nil {
		p.Deleting = true
		return p
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("rule", st.rule.Name, "parent", parent.GetNamespace()+"/"+parent.GetName()))
	out := c.sync(ctx, st, parent)
	p.Changes = out.changes()
	if out.result != nil {
		for _, w := range out.result.Waiting {
			p.Waiting = append(p.Waiting, fmt.Sprintf("%s waits for %s", w.ID, strings.Join(w.On, ", ")))
		}
		p.Refs, p.MissingRefs = out.result.DescribeRefs(), len(out.result.MissingRefs) > 0
	}
	if out.evalErr != nil {
		p.Errors = append(p.Errors, out.evalErr)
	}
	p.Errors = append(append(p.Errors, out.applyErr...), out.pruneErr...)
	if out.statusErr != nil {
		p.Errors = append(p.Errors, out.statusErr)
	}
	return p
}

// listParents returns the cached parents of the rule (in one namespace, or all), decoded,
// sorted by namespace and name.
func (st *ruleState) listParents(namespace string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, w := range st.parents {
		for _, o := range w.Informer.GetStore().List() {
			c := o.(*informers.Object)
			if namespace != "" && c.GetNamespace() != namespace {
				continue
			}
			u, err := c.Decode()
			if err != nil {
				return nil, err
			}
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	return out, nil
}

// Close stops every watch of a controller whose Run was never called (Run stops them
// itself when its context ends).
func (c *Controller) Close() {
	c.queue.ShutDown()
	c.stopAll()
	c.events.Shutdown()
}
