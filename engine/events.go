package engine

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kubecel/kubecel/rules"
)

// newRecorder returns an event recorder that writes Events through kube, or, in dry-run
// mode, only logs them.
func newRecorder(kube kubernetes.Interface, dryRun bool) (record.EventBroadcaster, record.EventRecorder) {
	b := record.NewBroadcaster()
	if !dryRun {
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	}
	return b, b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubecel"})
}

// event records an Event on obj. Messages never carry object contents, so no Secret
// value can leak through them.
func (c *Controller) event(obj *unstructured.Unstructured, eventType, reason, format string, args ...any) {
	if c.opts.DryRun {
		return
	}
	c.recorder.Eventf(obj, eventType, reason, format, args...)
}

// recordOutcome records a Warning Event on the parent for each distinct failure of a
// reconcile. It does not log: the worker logs the error the reconcile returns.
func (c *Controller) recordOutcome(st *ruleState, parent *unstructured.Unstructured, out *outcome) {
	key := keyFor(st, parent)
	if out.synced() {
		c.lastFailure.Delete(key)
	}
	report := func(reason string, errs ...error) {
		// One Event per distinct failure: re-reconciling a parent that is stuck in the
		// same error must not write again and again.
		msg := truncate(errors.Join(errs...).Error(), 1024)
		seen := string(parent.GetUID()) + "|" + reason + "|" + msg
		if last, ok := c.lastFailure.Load(key); ok && last == seen {
			return
		}
		c.lastFailure.Store(key, seen)
		c.event(parent, "Warning", reason, "%s", msg)
	}
	if out.panicked != nil {
		report(rules.ReasonReconcilePanic, out.panicked)
	}
	if out.evalErr != nil {
		report(evalReason(out.evalErr), out.evalErr)
	}
	conflicts, others := splitConflicts(out.applyErr)
	if len(conflicts) > 0 {
		report(rules.ReasonChildExists, conflicts...)
	}
	if len(others) > 0 {
		report(rules.ReasonApplyFailed, others...)
	}
	if len(out.pruneErr) > 0 {
		report(rules.ReasonPruneFailed, out.pruneErr...)
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
