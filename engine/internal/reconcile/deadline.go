package reconcile

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/engine/internal/watch"
)

// deadlineRetries is how many evaluations of a parent in a row the evaluation deadline
// may stop before the parent reports it. On a starved CPU an evaluation misses the
// deadline now and then; reporting each would write the parent's status twice (the
// error, then the recovery) and, during a rollout, restart the step's healthy time, for
// nothing. An expression too slow for the deadline misses it every time, and is reported
// at the third.
const deadlineRetries = 2

// deferDeadline reports whether the reconcile of parent, whose evaluation the deadline
// stopped, leaves the error unreported this time and is retried instead (with the
// queue's backoff); it counts the evaluations in a row it deferred, and forgets them
// once an evaluation ends otherwise. A dry run reports at once.
func (c *Reconciler) deferDeadline(st *watch.Rule, parent *unstructured.Unstructured, out *outcome) bool {
	key := watch.KeyFor(st.Rule.Name, parent)
	if out.evalErr == nil || !errors.Is(out.evalErr, context.DeadlineExceeded) || c.opts.DryRun {
		if c.memory.view(key).deadlines > 0 {
			c.memory.update(key, func(p *parentMemo) { p.deadlines = 0 })
		}
		return false
	}
	deferred := false
	c.memory.update(key, func(p *parentMemo) {
		if p.deadlines < deadlineRetries {
			p.deadlines++
			deferred = true
			return
		}
		p.deadlines = 0
	})
	return deferred
}
