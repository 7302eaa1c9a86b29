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

	"github.com/kubecel/kubecel/engine/internal/reconcile"
	"github.com/kubecel/kubecel/rules/contract"
)

// The loop: a worker takes a key, runs one reconcile, and only then decides what
// happens to the key. A reconcile never requeues, sleeps or logs its failure; it returns
// a result and an error, and the worker logs the error once and makes one queue call.

// reasonOther is the kubecel_reconcile_errors_total reason of any failure outside a
// reconcile of a live parent (a deleted parent's teardown, a finalizer, a cache read).
const reasonOther = "Other"

// processNext runs the reconcile of one key and requeues the key as its outcome says.
func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	// The fair queue counts the key running until after Done: a key that yielded (queued
	// again while it ran) goes back by Done while its flow still runs it, so its flow
	// goes to the back of the round, not among the fresh ones.
	defer c.fair.finished(key)
	defer c.queue.Done(key)
	if c.opts.Shard != nil {
		end, ok := c.opts.Shard.Begin(key.Bucket())
		if !ok {
			// Another replica serves the parent now (or will, once the ring settles).
			c.queue.Forget(key)
			return true
		}
		defer end()
		defer c.moved.reconciled(key)
	}
	waiting := time.Now()
	c.pause.RLock()
	defer c.pause.RUnlock()
	// The pause is the one lock a worker takes: the running rules are read without one.
	c.metrics.LockWait.Observe(time.Since(waiting).Seconds())
	c.busy.Add(1)
	defer c.busy.Add(-1)
	c.reconciles.Add(1)
	logger := klog.FromContext(ctx).WithValues("rule", key.Rule, "parent", key.Namespace+"/"+key.Name)
	ctx = klog.NewContext(ctx, logger)
	st := c.view.Load().forKey(key)
	start := time.Now()
	res, err := caught(key, func() (reconcile.Result, error) {
		if c.testHook != nil {
			c.testHook(key)
		}
		if st == nil {
			return reconcile.Result{}, nil // the rule was removed or waits for its kinds
		}
		return c.reconciler.Reconcile(ctx, st, key)
	})
	c.metrics.ObserveReconcile(key.Rule, err, time.Since(start))
	if res.Yield && err == nil {
		c.metrics.Yields.WithLabelValues(key.Rule).Inc()
	}
	var p *panicError
	if errors.As(err, &p) {
		c.metrics.Panics.WithLabelValues(key.Rule).Inc()
		res.Reason = contract.ReasonReconcilePanic
		if st != nil {
			err = errors.Join(err, c.reconciler.ReportPanic(ctx, st, key, p))
		}
	}
	if err != nil {
		c.metrics.Errors.WithLabelValues(key.Rule, cmp.Or(res.Reason, reasonOther)).Inc()
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

// caught runs a reconcile with a panic turned into a *panicError: a bug hit by one
// parent costs that parent a retry with backoff, not the process the other parents.
// (Run's utilruntime.HandleCrash would log the panic and crash the process.)
func caught(key queueKey, fn func() (reconcile.Result, error)) (res reconcile.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = reconcile.Result{}, &panicError{rule: key.Rule, value: r, stack: debug.Stack()}
		}
	}()
	return fn()
}

// requeue makes the queue calls that a reconcile's result and error ask for (see
// reconcile.Result), and says what it did, for the log.
func requeue(q workqueue.TypedRateLimitingInterface[queueKey], key queueKey, res reconcile.Result, err error) string {
	switch {
	case err == nil && (res.Yield || res.Again):
		q.Forget(key)
		q.Add(key)
		if res.Again {
			return "again"
		}
		return "yielded"
	case err == nil && res.RequeueAfter > 0:
		q.Forget(key)
		q.AddAfter(key, res.RequeueAfter)
		return "after " + res.RequeueAfter.String()
	case err == nil || reconcile.IsTerminal(err):
		q.Forget(key)
		return "on change"
	case res.RequeueAfter > 0:
		q.AddAfter(key, res.RequeueAfter)
		return "after " + res.RequeueAfter.String()
	default:
		q.AddRateLimited(key)
		return "backoff"
	}
}
