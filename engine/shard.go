package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/rules"
)

// Shard tells a controller which parents it serves when several replicas share them
// (kubecel run --sharding). Parents fall into buckets by rules.Bucket; a replica serves
// some of the buckets at a time.
type Shard interface {
	// Begin reports whether the replica serves bucket now. When it does, end must be
	// called once the reconcile is over: until then the bucket is not given away.
	Begin(bucket int) (end func(), ok bool)
	// Serves reports whether the replica serves bucket now.
	Serves(bucket int) bool
}

// With a Shard, the controller queues and reconciles only the parents of the buckets it
// serves, and its child informers hold only the children of those buckets (selected by
// rules.LabelBucket): WatchBuckets changes them. Parent informers hold every parent; the
// queue drops the keys of other buckets. Ref informers hold every object they would
// without sharding: a ref may read any object.

// serves reports whether this replica serves the parent with this namespace and name.
func (c *Controller) serves(namespace, name string) bool {
	return c.opts.Shard == nil || c.opts.Shard.Serves(rules.Bucket(namespace, name))
}

// begin is Shard.Begin for the parent with this namespace and name, for work outside
// a reconcile; without a Shard it always succeeds.
func (c *Controller) begin(namespace, name string) (end func(), ok bool) {
	if c.opts.Shard == nil {
		return func() {}, true
	}
	return c.opts.Shard.Begin(rules.Bucket(namespace, name))
}

// bucketOf is the bucket of a queue key.
func bucketOf(key queueKey) int { return rules.Bucket(key.Namespace, key.Name) }

// shardQueue is the controller's queue, dropping the keys of buckets the replica does not
// serve, so that no handler, requeue or retry needs to ask.
type shardQueue struct {
	workqueue.TypedRateLimitingInterface[queueKey]
	shard Shard
}

func (q shardQueue) Add(key queueKey) {
	if q.shard.Serves(bucketOf(key)) {
		q.TypedRateLimitingInterface.Add(key)
	}
}

func (q shardQueue) AddAfter(key queueKey, d time.Duration) {
	if q.shard.Serves(bucketOf(key)) {
		q.TypedRateLimitingInterface.AddAfter(key, d)
	}
}

func (q shardQueue) AddRateLimited(key queueKey) {
	if q.shard.Serves(bucketOf(key)) {
		q.TypedRateLimitingInterface.AddRateLimited(key)
	} else {
		q.Forget(key)
	}
}

// noBuckets selects no child: what a replica watches before it serves a ring.
const noBuckets = "none"

// bucketSelector is the label selector of the children of buckets: "" for every bucket.
func bucketSelector(buckets []int) string {
	if len(buckets) == rules.Buckets {
		return ""
	}
	values := make([]string, 0, len(buckets))
	for _, b := range buckets {
		values = append(values, rules.BucketLabel(b))
	}
	if len(values) == 0 {
		values = []string{noBuckets}
	}
	return rules.LabelBucket + " in (" + strings.Join(values, ",") + ")"
}

// childWatchKey is the key of the informer of kubecel's objects of one resource, in
// every namespace, restricted to the buckets the replica serves. The caller holds c.mu.
func (c *Controller) childWatchKey(gvr schema.GroupVersionResource) informers.Key {
	key := managedWatchKey(gvr)
	if c.buckets != "" {
		key.Selector += "," + c.buckets
	}
	return key
}

// WatchBuckets makes the child informers of every running rule hold the children of
// these buckets, and returns once the new informers have synced. Reconciles pause only
// while the informers are swapped, after the sync.
func (c *Controller) WatchBuckets(ctx context.Context, buckets []int) error {
	selector := bucketSelector(buckets)
	c.mu.Lock()
	if selector == c.buckets {
		c.mu.Unlock()
		return nil
	}
	previous := c.buckets
	c.buckets = selector
	next := map[*childKind]*informers.Watch{}
	var err error
acquire:
	for _, st := range c.rules {
		for _, ck := range st.children {
			var w *informers.Watch
			if w, err = c.watches.Acquire(ctx, c.childWatchKey(ck.GVR), c.setupChildInformer); err != nil {
				break acquire
			}
			next[ck] = w
		}
	}
	c.mu.Unlock()
	if err == nil {
		err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
			for _, w := range next {
				if !w.Synced() {
					return false, nil
				}
			}
			return true, nil
		})
	}
	c.pause.Lock()
	defer c.pause.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for ck, w := range next {
		if err != nil || !c.holdsKind(ck) {
			c.watches.Release(w)
			continue
		}
		old := ck.watch
		ck.watch = w
		c.watches.Release(old)
	}
	if err != nil {
		// The old informers stay; the next call tries the new selector again. (A rule
		// started meanwhile keeps the new one: its caches hold at least as much as
		// the member serves, whichever way the buckets change.)
		c.buckets = previous
		return fmt.Errorf("watch the children of buckets %s: %w", selector, err)
	}
	klog.FromContext(ctx).V(1).Info("Child informers follow the buckets", "buckets", len(buckets))
	return nil
}

// holdsKind reports whether ck belongs to a running rule. The caller holds c.mu.
func (c *Controller) holdsKind(ck *childKind) bool {
	for _, st := range c.rules {
		if st.children[ck.GVK.GroupKind()] == ck {
			return true
		}
	}
	return false
}

// EnqueueMoved queues every parent of every running rule whose bucket gained says, and
// calls done once each of them has been reconciled once (at once when there is none).
func (c *Controller) EnqueueMoved(gained func(bucket int) bool, done func()) {
	c.mu.RLock()
	var keys []queueKey
	for _, st := range c.rules {
		for _, key := range st.parentKeys() {
			if gained(bucketOf(key)) {
				keys = append(keys, key)
			}
		}
	}
	c.mu.RUnlock()
	c.moved.start(keys, done, func(k queueKey) bool { return c.opts.Shard == nil || c.opts.Shard.Serves(bucketOf(k)) })
	for _, k := range keys {
		c.queue.Add(k)
	}
}

// movedParents tracks the parents queued by each EnqueueMoved until each has been
// reconciled once. Ring changes may come faster than handovers complete: each keeps its
// own parents and done, so a second change does not lose the first one's (its
// kubecel_shard_handover_duration_seconds), and a parent that moved away again before
// it was reconciled here no longer holds up an earlier handover.
type movedParents struct {
	mu      sync.Mutex
	pending []*handover
}

// handover is one EnqueueMoved's parents not reconciled yet, and what to call after.
type handover struct {
	keys map[queueKey]bool
	done func()
}

// start begins a handover of keys; serves tells which parents the replica still serves,
// so that earlier handovers stop waiting for the others.
func (m *movedParents) start(keys []queueKey, done func(), serves func(queueKey) bool) {
	h := &handover{keys: make(map[queueKey]bool, len(keys)), done: done}
	for _, k := range keys {
		h.keys[k] = true
	}
	m.mu.Lock()
	for _, earlier := range m.pending {
		for k := range earlier.keys {
			if !serves(k) {
				delete(earlier.keys, k)
			}
		}
	}
	m.pending = append(m.pending, h)
	m.mu.Unlock()
	m.reconciled(queueKey{}) // completes the handovers left with nothing to wait for
}

// reconciled marks key as reconciled, and calls the done of each handover it was the
// last parent of, oldest first.
func (m *movedParents) reconciled(key queueKey) {
	m.mu.Lock()
	var finished []func()
	kept := m.pending[:0]
	for _, h := range m.pending {
		delete(h.keys, key)
		if len(h.keys) == 0 {
			finished = append(finished, h.done)
		} else {
			kept = append(kept, h)
		}
	}
	clear(m.pending[len(kept):])
	m.pending = kept
	m.mu.Unlock()
	for _, done := range finished {
		done()
	}
}

// registerOwnedParents adds kubecel_shard_owned_parents: the parents, per rule and in
// all, that this replica serves.
func (c *Controller) registerOwnedParents(reg *prometheus.Registry) error {
	return reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "kubecel_shard_owned_parents", Help: "Parents (one per rule that selects it) this replica serves.",
	}, func() float64 {
		c.mu.RLock()
		defer c.mu.RUnlock()
		n := 0
		for _, st := range c.rules {
			for _, key := range st.parentKeys() {
				if c.opts.Shard.Serves(bucketOf(key)) {
					n++
				}
			}
		}
		return float64(n)
	}))
}
