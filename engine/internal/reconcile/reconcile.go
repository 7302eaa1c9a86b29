package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/compare"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/engine/plan"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// outcome collects what one reconcile did and what went wrong, for status and events.
type outcome struct {
	result   *rules.Result
	evalErr  error
	applyErr []error
	pruneErr []error
	// statusErr is the failure to write the parent's status.
	statusErr error
	// writes lists every write made (or, in a dry run, planned), in order.
	writes []write
	// applied holds the objects written in this reconcile (server responses), by key.
	applied map[watch.ObjectKey]*unstructured.Unstructured
	// panicked is set, alone, when the reconcile panicked (see ReportPanic).
	panicked error
	// left is how many more child writes this reconcile may send (Reconciler.batch);
	// yielded is set when a write was left for the next turn because none were left,
	// and rest then holds the children of that round not gone through yet, shaped.
	left    int
	yielded bool
	rest    []rules.Desired
}

// spent reports whether the reconcile's batch of writes is spent; then the write about
// to be sent waits for the parent's next turn, and the outcome is marked yielded.
func (o *outcome) spent() bool {
	if o.left > 0 {
		return false
	}
	o.yielded = true
	return true
}

func (o *outcome) synced() bool {
	return o.evalErr == nil && len(o.applyErr) == 0 && len(o.pruneErr) == 0 && o.panicked == nil
}

// Reconcile makes one parent's children and status match its running rule st: the
// parent with key, whether it lives, is being deleted, is gone or is no longer selected.
// The loop decides from its result and error what happens to the key next.
func (c *Reconciler) Reconcile(ctx context.Context, st *watch.Rule, key watch.Key) (Result, error) {
	if !st.Enter() {
		return Result{}, nil // the rule was removed or waits for its kinds
	}
	defer st.Leave()
	if !st.Synced() {
		return Result{RequeueAfter: 200 * time.Millisecond}, nil // caches still syncing
	}
	parent, ok, err := st.Get(key)
	if err != nil {
		return Result{}, err
	}
	if !ok {
		// Deleted (kubecel deletes its children: teardown.go), or no longer selected
		// by the rule (released).
		c.parentGone(st, key)
		return c.deletion.releaseGone(ctx, st, key)
	}
	// A new parent of the same name as one deleted: the old one's children go first.
	if res, err := c.deletion.replaced(ctx, st, key, parent); err != nil || res.RequeueAfter > 0 || res.Yield {
		return res, err
	}
	if parent.GetDeletionTimestamp() != nil {
		c.memory.takeResume(key)
		return c.deletion.finalize(ctx, st, parent)
	}
	events := st.RefEvents()
	if todo := c.resumeFrom(st, parent, events); todo != nil {
		rest, wrote := c.continueWith(ctx, st, parent, todo)
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		if len(rest) > 0 || wrote > 0 {
			// The full reconcile, with its own batch, on the next turn.
			c.saveResume(st, parent, events, rest)
			return Result{Yield: true}, nil
		}
	}
	out := c.sync(ctx, st, parent)
	refsMoved := false
	if len(st.Rule.Refs) > 0 && out.result != nil {
		st.SetReads(key, out.result.Refs)
		// A referenced object may have changed before the index knew this parent
		// reads it: look again.
		refsMoved = st.RefEvents() != events
	}
	if ctx.Err() != nil {
		// Stopping: what failed failed because of it, and is not the parent's problem.
		return Result{}, ctx.Err()
	}
	if out.yielded {
		// More to write: the next turn continues, and reports what this one found.
		c.saveResume(st, parent, events, out.rest)
		return Result{Yield: true}, nil
	}
	if c.opts.DryRun {
		logPlan(ctx, out.changes(st.Rule))
	}
	c.recordOutcome(st, parent, out)
	c.memory.observeReady(key, readyCondition(out).Status == metav1.ConditionTrue, time.Now())
	res, err := out.verdict()
	if refsMoved && err == nil && res.RequeueAfter == 0 {
		res.Again = true
	}
	return res, err
}

// verdict turns what went wrong in a reconcile of a live parent into the worker's
// result and error.
func (o *outcome) verdict() (Result, error) {
	failed := errors.Join(slices.Concat(o.applyErr, o.pruneErr, []error{o.statusErr})...)
	reason := reasonStatusFailed
	if !o.synced() {
		reason = syncedCondition(o).Reason
	}
	switch {
	case failed == nil && o.evalErr == nil:
		return Result{}, nil
	case failed == nil && !errors.Is(o.evalErr, context.DeadlineExceeded):
		// Evaluation errors are deterministic (a type error, the cost limit): retrying
		// without a change would only fail again, and the next change to the parent or
		// a child reconciles again. The deadline is the exception: it depends on how
		// busy the machine is, so an evaluation it stopped is retried with backoff.
		return Result{Reason: reason}, Terminal(o.evalErr)
	case onlyConflicts(o):
		// A name held by another object: its holder's events requeue the parent when
		// the holder is kubecel's; a foreign object is looked at again now and then,
		// without backoff growing to many minutes.
		return Result{RequeueAfter: conflictRetry, Reason: reason}, failed
	}
	return Result{Reason: reason}, errors.Join(o.evalErr, failed)
}

// conflictRetry is how long a parent whose child's name is taken waits before it looks
// again, when no event of the holder requeues it earlier.
const conflictRetry = 30 * time.Second

// onlyConflicts reports whether a reconcile failed only because child names are taken.
func onlyConflicts(out *outcome) bool {
	if out.evalErr != nil || len(out.pruneErr) > 0 || out.statusErr != nil || len(out.applyErr) == 0 {
		return false
	}
	for _, err := range out.applyErr {
		if !isConflict(err) {
			return false
		}
	}
	return true
}

// sync is the reconcile of a live parent, shared by the controller and by plan: apply
// the children, prune what is no longer produced (only when everything applied), write
// the status. Every write goes into the outcome's changes; in a dry run every write is
// sent with DryRun=All, so the changes are exactly what the server would do.
func (c *Reconciler) sync(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured) *outcome {
	out := c.converge(ctx, st, parent)
	if out.yielded {
		return out // no prune and no status until every child is written
	}
	if out.evalErr == nil && len(out.applyErr) == 0 {
		out.pruneErr = c.prune(ctx, st, parent, out)
		if out.yielded {
			return out
		}
		if out.result.Skip && len(out.pruneErr) == 0 && Holds(st, parent) {
			// The rule's `when` lets go of the parent: its children are pruned, so
			// its finalizer has nothing left to guard.
			if err := c.finalizers.remove(ctx, st, parent); err != nil {
				out.pruneErr = append(out.pruneErr, err)
			}
		}
	}
	out.statusErr = c.writeStatus(ctx, st, parent, out)
	if out.statusErr == nil {
		out.statusErr = c.markRevision(ctx, st, parent, out)
	}
	return out
}

// converge evaluates the rule and applies the desired children in dependency order.
// After applying, it evaluates again with the applied objects as observed children, so
// the status and readiness it reports include them, and a child that waited for one of
// them (and needs no further readiness) is applied in the same reconcile.
func (c *Reconciler) converge(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured) *outcome {
	logger := klog.FromContext(ctx)
	out := &outcome{applied: map[watch.ObjectKey]*unstructured.Unstructured{}, left: c.batch}
	owned, err := c.observe(st, parent)
	if err != nil {
		out.evalErr = fmt.Errorf("rule %q: read children: %w", st.Rule.Name, err)
		return out
	}
	live := map[watch.ObjectKey]*unstructured.Unstructured{}
	for _, o := range owned {
		live[watch.KeyOf(o)] = o
	}
	failed := map[watch.ObjectKey]bool{} // applies that failed are not retried in a later round
	for round := 0; round <= len(st.Rule.Children); round++ {
		res, err := st.Rule.EvaluateWithRefs(ctx, parent.Object, st.Rule.Observe(observed(owned, out.applied)), st.Refs())
		out.result, out.evalErr = res, err
		if err != nil {
			c.metrics.CELErrors.WithLabelValues(st.Rule.Name).Inc()
		}
		if res == nil || res.Skip {
			return out
		}
		progressed := false
		shaped, err := c.shape(st, parent, res.Children)
		if err != nil {
			out.applyErr = append(out.applyErr, err)
		}
		for i, d := range shaped {
			obj := &unstructured.Unstructured{Object: d.Object}
			k := watch.KeyOf(obj)
			if _, done := out.applied[k]; done || failed[k] {
				continue
			}
			// The finalizer guards every child garbage collection cannot reach, also one
			// that needs no write now (a rule removed and added back finds its children
			// in place, and its finalizer gone).
			if err := c.finalizers.ensureFor(ctx, st, parent, obj, out); err != nil {
				out.applyErr = append(out.applyErr, err)
				continue
			}
			if !compare.NeedsApply(obj, live[k]) {
				continue
			}
			if live[k] != nil && c.orphaning(ctx, st, parent, obj, live[k]) {
				continue // the parent's deletion takes it: finalize sees it next
			}
			if out.spent() {
				out.rest = shaped[i:]
				return out
			}
			got, err := c.writeChild(ctx, st, parent, d.ID, obj, live[k])
			if err != nil {
				out.applyErr = append(out.applyErr, err)
				failed[k] = true
				continue
			}
			out.left--
			logger.V(2).Info("Applied child", "child", d.ID, "object", shown(st, d.ID, k))
			action := plan.ActionUpdate
			if live[k] == nil {
				action = plan.ActionCreate
			}
			out.record(action, d.ID, live[k], got)
			out.applied[k] = got
			progressed = true
		}
		if !progressed {
			return out
		}
	}
	return out
}

// writeChild creates the child (live nil: the name must be free) or applies it over live,
// and remembers a parent whose child's name another object holds, so that the holder's
// going requeues it.
func (c *Reconciler) writeChild(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured, id string, obj, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var got *unstructured.Unstructured
	var err error
	if live == nil {
		got, err = c.create(ctx, st, parent, id, obj)
	} else {
		got, err = c.apply(ctx, st, id, obj)
	}
	if isConflict(err) {
		c.waiting.add(watch.KeyOf(obj).String(), watch.KeyFor(st.Rule.Name, parent))
	}
	return got, err
}

// observe returns the parent's children under this rule as the cache shows them,
// updated with our own writes the cache does not show yet, decoded.
//
// Our writes are read before the cache. A watch event that arrives in between moves a
// child from one to the other (its handler indexes it, then forgets the write), so read
// the other way round a child created just before would be in neither, and created
// again: what a parent's next turn after a yield, which follows its last write at once,
// met a few times per thousand children.
func (c *Reconciler) observe(st *watch.Rule, parent *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	uid := string(parent.GetUID())
	mine := c.written.Children(uid)
	cached := st.OwnedChildren(uid)
	seen := make(map[string]bool, len(cached))
	out := make([]*unstructured.Unstructured, 0, len(cached))
	for _, o := range cached {
		k := watch.KeyOf(o).String()
		seen[k] = true
		if mine := c.written.Newer(k, o); mine != nil {
			out = append(out, mine)
			continue
		}
		u, err := o.Decode()
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	for _, o := range mine {
		if seen[watch.KeyOf(o).String()] {
			continue
		}
		if o.GetLabels()[contract.LabelRule] == st.Rule.Name && o.GetAnnotations()[contract.AnnotationOrigin] == st.Rule.Origin {
			out = append(out, o)
		}
	}
	return out, nil
}

// observed returns the cached children, overlaid with the objects applied in this
// reconcile, for the rule's `children` variable (grouped by rules.Rule.Observe).
func observed(owned []*unstructured.Unstructured, applied map[watch.ObjectKey]*unstructured.Unstructured) []map[string]any {
	out := make([]map[string]any, 0, len(owned)+len(applied))
	seen := map[watch.ObjectKey]bool{}
	for _, o := range owned {
		k := watch.KeyOf(o)
		seen[k] = true
		if a, ok := applied[k]; ok {
			o = a
		}
		out = append(out, o.Object)
	}
	for k, a := range applied {
		if !seen[k] {
			out = append(out, a.Object)
		}
	}
	return out
}

// childError names the rule, child and object in an error.
func childError(st *watch.Rule, child string, k watch.ObjectKey, err error) error {
	return fmt.Errorf("rule %q child %q: %s: %w", st.Rule.Name, child, shown(st, child, k), err)
}

// shown names an object of the rule's child for Events, logs, conditions and errors:
// with its name withheld where the child computes it from Secret data
// (rules.Rule.ShowObject).
func shown(st *watch.Rule, child string, k watch.ObjectKey) string {
	return st.Rule.ShowObject(child, k.GK, k.Namespace, k.Name)
}
