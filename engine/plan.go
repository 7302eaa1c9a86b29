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
)

// Action is the kind of write a Change makes.
type Action string

// Actions.
const (
	ActionCreate    Action = "create"
	ActionUpdate    Action = "update"
	ActionPrune     Action = "prune"
	ActionRelease   Action = "release"
	ActionFinalizer Action = "finalizer"
	ActionStatus    Action = "status"
)

// Change is one write a reconcile made or, in a dry run, would make. Every reconcile
// records its changes the same way; the controller executes them, and a dry run (plan,
// run --dry-run) sends them with DryRun=All and reports them.
type Change struct {
	Action Action `json:"action"`
	// Child is the child id; empty for the parent's status and finalizer.
	Child  string    `json:"child,omitempty"`
	Object ObjectRef `json:"object"`
	// Fields lists what differs between the live object and the server's response to
	// the apply (empty for a prune). Secret values are redacted.
	Fields []FieldChange `json:"fields,omitempty"`
}

// ObjectRef names an object.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

func refOf(obj *unstructured.Unstructured) ObjectRef {
	return ObjectRef{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// String is "Kind.group namespace/name", as in log lines and errors.
func (r ObjectRef) String() string {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(r.APIVersion)
	u.SetKind(r.Kind)
	u.SetNamespace(r.Namespace)
	u.SetName(r.Name)
	return keyOf(u).String()
}

// Symbol is the change's one-character marker: + create, ~ update, - prune or release.
func (ch Change) Symbol() string {
	switch ch.Action {
	case ActionCreate:
		return OpAdd
	case ActionPrune, ActionRelease:
		return OpRemove
	}
	return OpChange
}

// Title is the change's first line without the marker.
func (ch Change) Title() string {
	switch ch.Action {
	case ActionStatus:
		return "status of " + ch.Object.String()
	case ActionFinalizer:
		return "finalizer of " + ch.Object.String()
	case ActionRelease:
		return fmt.Sprintf("%s (child %s) released: kept without kubecel's labels and owner reference (lifecycle Keep)", ch.Object, ch.Child)
	}
	return fmt.Sprintf("%s (child %s)", ch.Object, ch.Child)
}

// Text renders the change the way plan prints it and run --dry-run logs it: a title
// line, then one indented line per field.
func (ch Change) Text() string {
	var b strings.Builder
	b.WriteString(ch.Symbol() + " " + ch.Title())
	for _, f := range ch.Fields {
		b.WriteString("\n    " + f.String())
	}
	return b.String()
}

// newChange records a write: live is the object before (nil when it does not exist),
// got the server's response (nil for a prune). It returns false when the write changes
// nothing a reader can see (for example an apply that only takes ownership of fields).
func newChange(action Action, child string, live, got *unstructured.Unstructured) (Change, bool) {
	ref := live
	if ref == nil {
		ref = got
	}
	ch := Change{Action: action, Child: child, Object: refOf(ref)}
	switch action {
	case ActionPrune, ActionRelease:
		return ch, true
	case ActionStatus:
		ch.Fields = diffFields(live, got, "status")
	case ActionFinalizer:
		ch.Fields = diffFields(live, got, "metadata")
		ch.Fields = slices.DeleteFunc(ch.Fields, func(f FieldChange) bool { return !strings.HasPrefix(f.Path, "metadata.finalizers") })
	default:
		ch.Fields = diffFields(live, got, "")
	}
	return ch, action == ActionCreate || len(ch.Fields) > 0
}

// write is one write of a reconcile, kept as sent so that the diff is computed only
// when someone reads it (plan, run --dry-run), not at every write of the controller.
type write struct {
	action    Action
	child     string
	live, got *unstructured.Unstructured
}

// record adds a write to the reconcile's outcome. live and got must not change later.
func (o *outcome) record(action Action, child string, live, got *unstructured.Unstructured) {
	o.writes = append(o.writes, write{action: action, child: child, live: live, got: got})
}

// changes returns the reconcile's writes that change something a reader can see.
func (o *outcome) changes() []Change {
	var out []Change
	for _, w := range o.writes {
		if ch, ok := newChange(w.action, w.child, w.live, w.got); ok {
			out = append(out, ch)
		}
	}
	return out
}

// logPlan logs each change of a dry-run reconcile, one line per change with the diff.
func logPlan(ctx context.Context, changes []Change) {
	logger := klog.FromContext(ctx)
	for _, ch := range changes {
		logger.Info("Planned change", "child", ch.Child, "action", string(ch.Action), "object", ch.Object.String(), "diff", ch.Text())
	}
}

// ParentPlan is what one reconcile of one parent would change.
type ParentPlan struct {
	Rule    string
	Parent  ObjectRef
	Changes []Change
	// Waiting lists the children that are not evaluated yet because a child they read
	// would not exist or be ready ("config waits for service").
	Waiting []string
	// Errors are the failures of the reconcile: evaluation, children the server would
	// reject, prune and status errors. A parent with errors is still planned as far as
	// the controller would get.
	Errors []error
	// Deleting is true for a parent being deleted; it is not planned.
	Deleting bool
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
// running (its kinds are not served, or permissions are missing).
func (c *Controller) Plan(ctx context.Context, opts PlanOptions) ([]ParentPlan, error) {
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
	for name := range c.pending {
		if opts.Rule == "" || opts.Rule == name {
			pending = append(pending, name)
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
	var plans []ParentPlan
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
		return plans, fmt.Errorf("rules %s are not running: their kinds are not served or permissions are missing", strings.Join(pending, ", "))
	}
	return plans, nil
}

func (c *Controller) planParent(ctx context.Context, st *ruleState, parent *unstructured.Unstructured) ParentPlan {
	p := ParentPlan{Rule: st.rule.Name, Parent: refOf(parent)}
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
		for _, o := range w.informer.GetStore().List() {
			c := o.(*cachedObject)
			if namespace != "" && c.GetNamespace() != namespace {
				continue
			}
			u, err := c.decode()
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
