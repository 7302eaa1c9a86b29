package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/rules"
)

// outcome collects what one reconcile did and what went wrong, for status and events.
type outcome struct {
	result  *rules.Result
	evalErr error
	// deferred is set when the deadline stopped the evaluation and the reconcile
	// reports nothing this time (deferDeadline).
	deferred bool
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
	if todo := c.children.resumeFrom(st, parent, events); todo != nil {
		rest, wrote := c.children.continueWith(ctx, st, parent, todo)
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		if len(rest) > 0 || wrote > 0 {
			// The full reconcile, with its own batch, on the next turn.
			c.children.saveResume(st, parent, events, rest)
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
		c.children.saveResume(st, parent, events, out.rest)
		return Result{Yield: true}, nil
	}
	if out.deferred {
		// The deadline stopped the evaluation: retried with backoff, reported only if
		// it stops the next ones too (deadline.go).
		return Result{}, out.evalErr
	}
	if c.opts.DryRun {
		logPlan(ctx, out.changes(st.Rule))
	}
	c.report.recordOutcome(st, parent, out)
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
	out := c.children.converge(ctx, st, parent)
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
	if c.deferDeadline(st, parent, out) {
		out.deferred = true
		return out // neither the status nor a revision: the retry reports
	}
	out.statusErr = c.report.writeStatus(ctx, st, parent, out)
	if out.statusErr == nil {
		out.statusErr = c.report.markRevision(ctx, st, parent, out)
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
