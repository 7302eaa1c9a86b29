package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/rules/contract"
)

// recorder records Events on parents; one without an EventRecorder records none (a dry
// run).
type recorder struct{ r record.EventRecorder }

// event records an Event on obj. Messages never carry object contents, so no Secret
// value can leak through them.
func (r recorder) event(obj *unstructured.Unstructured, eventType, reason, format string, args ...any) {
	if r.r == nil {
		return
	}
	r.r.Eventf(obj, eventType, reason, format, args...)
}

// recordOutcome records a Warning Event on the parent for each distinct failure of a
// reconcile. It does not log: the worker logs the error the reconcile returns.
func (c *reporter) recordOutcome(st *watch.Rule, parent *unstructured.Unstructured, out *outcome) {
	key := watch.KeyFor(st.Rule.Name, parent)
	if out.synced() {
		c.memory.update(key, func(p *parentMemo) { p.lastFailure = "" })
	}
	report := func(reason string, errs ...error) {
		// One Event per distinct failure: re-reconciling a parent that is stuck in the
		// same error must not write again and again.
		msg := truncate(errors.Join(errs...).Error(), 1024)
		seen := string(parent.GetUID()) + "|" + reason + "|" + msg
		if c.memory.view(key).lastFailure == seen {
			return
		}
		c.memory.update(key, func(p *parentMemo) { p.lastFailure = seen })
		c.events.event(parent, "Warning", reason, "%s", msg)
	}
	if out.panicked != nil {
		report(contract.ReasonReconcilePanic, out.panicked)
	}
	if out.evalErr != nil {
		report(evalReason(out.evalErr), out.evalErr)
	}
	conflicts, others := splitConflicts(out.applyErr)
	if mismatches := slices.DeleteFunc(slices.Clone(conflicts), func(err error) bool { return !isMismatch(err) }); len(mismatches) > 0 {
		report(contract.ReasonIdentityMismatch, mismatches...)
	} else if len(conflicts) > 0 {
		report(contract.ReasonChildExists, conflicts...)
	}
	if len(others) > 0 {
		report(contract.ReasonApplyFailed, others...)
	}
	if len(out.pruneErr) > 0 {
		report(contract.ReasonPruneFailed, out.pruneErr...)
	}
}

// splitConflicts separates the errors of names held by other objects from the rest.
func splitConflicts(errs []error) (conflicts, others []error) {
	for _, err := range errs {
		if isConflict(err) {
			conflicts = append(conflicts, err)
		} else {
			others = append(others, err)
		}
	}
	return conflicts, others
}

// ReportPanic sets the parent's Synced condition to False (reason ReconcilePanic) and
// records a Warning Event, after a reconcile of key panicked. The parent is read from
// the rule's cache by key: the panic may have come before the reconcile read it. A
// panic while reporting is returned as an error.
func (c *Reconciler) ReportPanic(ctx context.Context, st *watch.Rule, key watch.Key, panicked error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("report the panic on the parent: panicked again: %v", r)
		}
	}()
	if !st.Enter() {
		return nil
	}
	defer st.Leave()
	if !st.Synced() {
		return nil
	}
	parent, ok, err := st.Get(key)
	if err != nil || !ok {
		return err
	}
	out := &outcome{panicked: panicked}
	c.report.recordOutcome(st, parent, out)
	if err := c.report.writeStatus(ctx, st, parent, out); err != nil {
		return fmt.Errorf("report the panic on the parent: %w", err)
	}
	return nil
}
