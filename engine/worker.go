package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/rules"
)

// The loop: a worker takes a key, runs one reconcile, and only then decides what
// happens to the key. A reconcile never requeues, sleeps or logs its failure; it returns
// a result and an error, and the worker logs the error once and makes one queue call.

// result is what a reconcile asks of the queue besides its error. requeueAfter is the
// one way to ask for a delayed look:
//
//	error     requeueAfter  the worker
//	nil       0             forgets the key: the next event brings it back
//	nil       d             forgets the key's backoff and looks again after d
//	terminal  any           forgets the key: retrying cannot help, the next change can
//	other     0             retries with the queue's per-key exponential backoff
//	other     d             retries after d, neither growing nor resetting the backoff
//	nil       yield, again  forgets the key's backoff and queues it again at once
type result struct {
	requeueAfter time.Duration
	// yield is set by a reconcile that sent its batch of writes with more to send: the
	// key goes to the back of its flow at once (no backoff), and the next turn continues.
	yield bool
	// again asks for the same without work left: something the reconcile read may have
	// changed while it ran (a ref's event came before the index knew the parent reads it).
	again bool
	// reason says why a reconcile of a live parent failed, for kubecel_reconcile_errors_total:
	// the reason of the parent's Synced condition, or StatusFailed.
	reason string
}

// reasonStatusFailed is the reason of a failed reconcile whose only failure was writing
// the parent's status; reasonOther that of any failure outside a reconcile of a live
// parent (a deleted parent's teardown, a finalizer, a cache read).
const (
	reasonStatusFailed = "StatusFailed"
	reasonOther        = "Other"
)

// terminalError is a failure that a retry without a change would only repeat, such as
// an evaluation error of the rule. Wrap with terminal.
type terminalError struct{ err error }

func terminal(err error) error { return &terminalError{err: err} }

func (e *terminalError) Error() string { return e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

// worker processes keys until the queue shuts down.
func (c *Controller) worker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

// processNext runs the reconcile of one key and requeues the key as its outcome says.
func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	defer c.fair.finished(key)
	if c.opts.Shard != nil {
		end, ok := c.opts.Shard.Begin(bucketOf(key))
		if !ok {
			// Another replica serves the parent now (or will, once the ring settles).
			c.queue.Forget(key)
			return true
		}
		defer end()
		defer c.moved.reconciled(key)
	}
	c.pause.RLock()
	defer c.pause.RUnlock()
	c.busy.Add(1)
	defer c.busy.Add(-1)
	c.reconciles.Add(1)
	logger := klog.FromContext(ctx).WithValues("rule", key.Rule, "parent", key.Namespace+"/"+key.Name)
	ctx = klog.NewContext(ctx, logger)
	start := time.Now()
	res, err := c.reconcileCaught(ctx, key)
	c.metrics.ObserveReconcile(key.Rule, err, time.Since(start))
	if res.yield && err == nil {
		c.metrics.Yields.WithLabelValues(key.Rule).Inc()
	}
	var p *panicError
	if errors.As(err, &p) {
		c.metrics.Panics.WithLabelValues(key.Rule).Inc()
		res.reason = rules.ReasonReconcilePanic
		err = errors.Join(err, c.reportPanic(ctx, key, p))
	}
	if err != nil {
		c.metrics.Errors.WithLabelValues(key.Rule, cmp.Or(res.reason, reasonOther)).Inc()
	}
	retries := c.queue.NumRequeues(key)
	next := requeue(c.queue, key, res, err)
	switch {
	case p != nil:
		logger.Error(err, "Reconcile panicked", "requeue", next, "retries", retries, "stack", string(p.stack))
	case err != nil:
		logger.Error(err, "Reconcile failed", "requeue", next, "retries", retries)
	default:
		logger.V(1).Info("Reconciled", "requeue", next)
	}
	return true
}

// panicError is a panic recovered from a reconcile, with the stack where it happened.
type panicError struct {
	rule  string
	value any
	stack []byte
}

func (e *panicError) Error() string {
	return fmt.Sprintf("rule %q: reconcile panicked: %v (a bug in kubecel; the controller's log has the stack)", e.rule, e.value)
}

// reconcileCaught is reconcile with a panic turned into a *panicError: a bug hit by one
// parent costs that parent a retry with backoff, not the process the other parents.
// (Run's utilruntime.HandleCrash would log the panic and crash the process.)
func (c *Controller) reconcileCaught(ctx context.Context, key queueKey) (res result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = result{}, &panicError{rule: key.Rule, value: r, stack: debug.Stack()}
		}
	}()
	return c.reconcile(ctx, key)
}

// reportPanic sets the parent's Synced condition to False (reason ReconcilePanic) and
// records a Warning Event. The parent is read from the rule's cache by key: the panic
// may have come before the reconcile read it. A panic while reporting is returned.
func (c *Controller) reportPanic(ctx context.Context, key queueKey, p *panicError) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("report the panic on the parent: panicked again: %v", r)
		}
	}()
	st := c.rule(key.Rule)
	if st == nil || st.stopped.Load() || !st.synced() {
		return nil
	}
	parent, ok, err := st.getParent(key)
	if err != nil || !ok {
		return err
	}
	out := &outcome{panicked: p}
	c.recordOutcome(st, parent, out)
	if err := c.writeStatus(ctx, st, parent, out); err != nil {
		return fmt.Errorf("report the panic on the parent: %w", err)
	}
	return nil
}

// requeue makes the queue calls that a reconcile's result and error ask for (see
// result), and says what it did, for the log.
func requeue(q workqueue.TypedRateLimitingInterface[queueKey], key queueKey, res result, err error) string {
	switch {
	case err == nil && (res.yield || res.again):
		q.Forget(key)
		q.Add(key)
		if res.again {
			return "again"
		}
		return "yielded"
	case err == nil && res.requeueAfter > 0:
		q.Forget(key)
		q.AddAfter(key, res.requeueAfter)
		return "after " + res.requeueAfter.String()
	case err == nil || errors.As(err, new(*terminalError)):
		q.Forget(key)
		return "on change"
	case res.requeueAfter > 0:
		q.AddAfter(key, res.requeueAfter)
		return "after " + res.requeueAfter.String()
	default:
		q.AddRateLimited(key)
		return "backoff"
	}
}
