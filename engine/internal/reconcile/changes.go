package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kubecel/kubecel/engine/internal/compare"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/engine/plan"
	"github.com/kubecel/kubecel/rules"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
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

// changes returns the reconcile's writes that change something a reader can see, the
// names of children that rule computes from Secret data withheld.
func (o *outcome) changes(r *rules.Rule) []plan.Change {
	var out []plan.Change
	for _, w := range o.writes {
		ch, ok := newChange(w.action, w.child, w.live, w.got)
		if !ok {
			continue
		}
		if w.child != "" && r.WithholdsName(w.child) {
			withholdName(&ch)
		}
		out = append(out, ch)
	}
	return out
}

// withholdName replaces the change's object's name and namespace, and their values
// among its fields, with rules.Withheld.
func withholdName(ch *plan.Change) {
	ch.Object.Name = rules.Withheld
	if ch.Object.Namespace != "" {
		ch.Object.Namespace = rules.Withheld
	}
	for i, f := range ch.Fields {
		if f.Path == "metadata.name" || f.Path == "metadata.namespace" || f.Path == "metadata" {
			ch.Fields[i].Old, ch.Fields[i].New = withheld(f.Old), withheld(f.New)
		}
	}
}

func withheld(v any) any {
	if v == nil {
		return nil
	}
	return rules.Withheld
}

// logPlan logs each change of a dry-run reconcile, one line per change with the diff.
func logPlan(ctx context.Context, changes []plan.Change) {
	logger := klog.FromContext(ctx)
	for _, ch := range changes {
		logger.Info("Planned change", "child", ch.Child, "action", string(ch.Action), "object", ch.Object.String(), "diff", ch.Text())
	}
}

// Plan runs the reconcile of a live parent once and returns what it did: in a dry run
// (Options.DryRun), what it would do, exactly as the API server answered each write.
func (c *Reconciler) Plan(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured) plan.ParentPlan {
	p := plan.ParentPlan{Rule: st.Rule.Name, Parent: refOf(parent)}
	if parent.GetDeletionTimestamp() != nil {
		p.Deleting = true
		return p
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("rule", st.Rule.Name, "parent", parent.GetNamespace()+"/"+parent.GetName()))
	out := c.sync(ctx, st, parent)
	p.Changes = out.changes(st.Rule)
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
