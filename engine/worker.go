package engine

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// The loop: a worker takes a key, runs one reconcile, and only then decides what
// happens to the key. A reconcile never requeues, logs its own failure or sleeps; it
// returns a result and an error, and requeue turns them into one queue call.

// result is what a reconcile asks of the queue besides its error. requeueAfter is the
// one way to ask for a delayed look:
//
//	error  requeueAfter  the worker
//	nil    0             forgets the key: the next event brings it back
//	nil    d             forgets the key's backoff and looks again after d
//	error  0             retries with the queue's per-key exponential backoff
//	error  d             retries after d, neither growing nor resetting the backoff
type result struct {
	requeueAfter time.Duration
}

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
	c.busy.Add(1)
	defer c.busy.Add(-1)
	logger := klog.FromContext(ctx).WithValues("rule", key.Rule, "parent", key.Namespace+"/"+key.Name)
	ctx = klog.NewContext(ctx, logger)
	start := time.Now()
	res, err := c.reconcile(ctx, key)
	c.metrics.observeReconcile(key.Rule, err, time.Since(start))
	if err != nil {
		logger.Error(err, "Reconcile failed; will retry", "retries", c.queue.NumRequeues(key))
	}
	requeue(c.queue, key, res, err)
	return true
}

// requeue makes the queue call that a reconcile's result and error ask for (see result).
func requeue(q workqueue.TypedRateLimitingInterface[Key], key Key, res result, err error) {
	switch {
	case err == nil:
		q.Forget(key)
		if res.requeueAfter > 0 {
			q.AddAfter(key, res.requeueAfter)
		}
	case res.requeueAfter > 0:
		q.AddAfter(key, res.requeueAfter)
	default:
		q.AddRateLimited(key)
	}
}
