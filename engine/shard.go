package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Shard tells a controller which parents it serves when several replicas share them
// (kubecel run --sharding). Parents fall into buckets by contract.Bucket; a replica serves
// some of the buckets at a time.
type Shard interface {
	// Begin reports whether the replica serves bucket now. When it does, end must be
	// called once the reconcile is over: until then the bucket is not given away.
	Begin(bucket int) (end func(), ok bool)
	// Serves reports whether the replica serves bucket now.
	Serves(bucket int) bool
}

// With a Shard, the controller queues and reconciles only the parents of the buckets it
// serves, its child informers hold only the children of those buckets, and its parent
// informers hold only those parents whole, the others as stubs (watch.Watcher.Rebucket):
// WatchBuckets changes them.

// gate is the sharding gate of work outside the queue: whether this replica serves a
// parent now. Without a Shard it serves every parent.
type gate struct{ shard Shard }

// serves reports whether this replica serves the parent of key.
func (g gate) serves(key queueKey) bool {
	return g.shard == nil || g.shard.Serves(key.Bucket())
}

// begin is Shard.Begin for the parent of key; without a Shard it always succeeds.
func (g gate) begin(key queueKey) (end func(), ok bool) {
	if g.shard == nil {
		return func() {}, true
	}
	return g.shard.Begin(key.Bucket())
}

// shardQueue is the controller's queue, dropping the keys of buckets the replica does not
// serve, so that no handler, requeue or retry needs to ask.
type shardQueue struct {
	workqueue.TypedRateLimitingInterface[queueKey]
	shard Shard
}

func (q shardQueue) Add(key queueKey) {
	if q.shard.Serves(key.Bucket()) {
		q.TypedRateLimitingInterface.Add(key)
	}
}

func (q shardQueue) AddAfter(key queueKey, d time.Duration) {
	if q.shard.Serves(key.Bucket()) {
		q.TypedRateLimitingInterface.AddAfter(key, d)
	}
}

func (q shardQueue) AddRateLimited(key queueKey) {
	if q.shard.Serves(key.Bucket()) {
		q.TypedRateLimitingInterface.AddRateLimited(key)
	} else {
		q.Forget(key)
	}
}

// WatchBuckets makes the child informers of every running rule (and of the revisions
// their rollouts roll from) hold the children of these buckets, and their parent
// informers those parents whole, and returns once the new informers have synced.
// Reconciles pause only while the informers are swapped, after the sync.
func (c *Controller) WatchBuckets(ctx context.Context, buckets []int) error {
	rb, err := c.watcher.Rebucket(ctx, buckets)
	if rb == nil || err != nil {
		return err
	}
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return rb.Synced(), nil
	})
	c.pause.Lock()
	defer c.pause.Unlock()
	// A rule stopped or replaced meanwhile gets no informer.
	rb.Finish(err == nil)
	if err != nil {
		// The old informers stay; the next call tries the new selector again.
		return fmt.Errorf("watch the children of buckets %s: %w", rb.Selector(), err)
	}
	klog.FromContext(ctx).V(1).Info("Caches follow the buckets", "buckets", len(buckets))
	return nil
}

// EnqueueMoved queues every parent of every running rule whose bucket gained says, and
// calls done once each of them has been reconciled once (at once when there is none).
func (c *Controller) EnqueueMoved(gained func(bucket int) bool, done func()) {
	var keys []queueKey
	c.view.Load().each(func(st *watch.Rule) {
		for _, key := range st.ParentKeys() {
			if gained(key.Bucket()) {
				keys = append(keys, key)
			}
		}
	})
	c.moved.start(keys, done, c.life.gate.serves)
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
// all, that this replica serves; and kubecel_shard_cached_parents: those its caches
// hold, whole and as stubs.
func (c *Controller) registerOwnedParents(reg *prometheus.Registry) error {
	err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "kubecel_shard_owned_parents", Help: "Parents (one per rule that selects it) this replica serves.",
	}, func() float64 {
		n := 0
		c.view.Load().each(func(st *watch.Rule) {
			for _, key := range st.ParentKeys() {
				if c.life.gate.serves(key) {
					n++
				}
			}
		})
		return float64(n)
	}))
	if err != nil {
		return err
	}
	return reg.Register(cachedParents{c})
}

// cachedParents collects kubecel_shard_cached_parents.
type cachedParents struct{ c *Controller }

var cachedParentsDesc = prometheus.NewDesc("kubecel_shard_cached_parents",
	"Parents (one per running rule that selects it) in this replica's caches, by form: whole (those of the buckets it serves, and every parent of a rule with a rollout) or stub (identity only).",
	[]string{"form"}, nil)

func (p cachedParents) Describe(ch chan<- *prometheus.Desc) { ch <- cachedParentsDesc }

func (p cachedParents) Collect(ch chan<- prometheus.Metric) {
	var whole, stubs int
	p.c.view.Load().each(func(st *watch.Rule) {
		w, s := st.CountParents()
		whole, stubs = whole+w, stubs+s
	})
	ch <- prometheus.MustNewConstMetric(cachedParentsDesc, prometheus.GaugeValue, float64(whole), "whole")
	ch <- prometheus.MustNewConstMetric(cachedParentsDesc, prometheus.GaugeValue, float64(stubs), "stub")
}
