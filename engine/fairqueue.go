package engine

import (
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/kubecel/kubecel/engine/internal/metrics"
)

// The queue is fair across tenants. client-go's workqueue keeps its guarantees (a key is
// queued once, never handed to two workers at once, requeued when it changed while
// running); fairQueue only decides which waiting key a free worker takes next.
//
// Keys wait in flows, one FIFO per flow: the parent's namespace, or, for a
// cluster-scoped parent, the parent itself. A free worker takes the head of the flow with
// the fewest reconciles running, ties going round robin from the flow after the last one
// served. So while a namespace with many or large parents keeps every worker busy, a key
// of another namespace is taken by the next worker that comes free, and within a
// namespace its parents take turns: a reconcile that has more writes to send than its
// batch allows yields (see Options.MaxWritesPerReconcile), and its key goes to the back
// of its flow. The order is work conserving: a flow alone gets every worker.

// newQueue is the controller's queue: client-go's rate-limiting, delaying workqueue
// whose waiting keys fair orders, with its metrics in m.
func newQueue(fair *fairQueue, m *metrics.Metrics) workqueue.TypedRateLimitingInterface[queueKey] {
	fair.waited = m.ObserveWait
	const name = "kubecel"
	base := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[queueKey]{Name: name, MetricsProvider: m.QueueProvider(), Queue: fair})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[queueKey]{Name: name, MetricsProvider: m.QueueProvider(), Queue: base})
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[queueKey](),
		workqueue.TypedRateLimitingQueueConfig[queueKey]{Name: name, MetricsProvider: m.QueueProvider(), DelayingQueue: delaying})
}

// flowOf is the flow a key waits in.
func flowOf(key queueKey) string {
	if key.Namespace != "" {
		return key.Namespace
	}
	return "/" + key.Name // cluster-scoped parents are each a flow of their own
}

// fairQueue is a workqueue.Queue (the order of the waiting keys). The workqueue calls
// Push, Pop, Touch and Len under its own lock; running counts are also changed by the
// worker (finished), so fairQueue has its own lock.
type fairQueue struct {
	mu    sync.Mutex
	flows map[string]*flow
	// active lists the flows with waiting keys, in round-robin order; next is the
	// position at which the next search starts.
	active []*flow
	next   int
	len    int
	now    func() time.Time
	// waited, when set, observes each popped key's time in the queue, by whether its flow
	// was busy (another of its keys running or waiting) when the key was taken.
	waited func(busy bool, d time.Duration)
}

// flow is one namespace's (or cluster-scoped parent's) waiting keys and running count.
type flow struct {
	name    string
	keys    []waitingKey
	running int
}

type waitingKey struct {
	key   queueKey
	since time.Time
}

func newFairQueue() *fairQueue {
	return &fairQueue{flows: map[string]*flow{}, now: time.Now}
}

// Touch is called for a key added again while it waits: it keeps its place.
func (q *fairQueue) Touch(queueKey) {}

// Push adds a key at the back of its flow.
func (q *fairQueue) Push(key queueKey) {
	q.mu.Lock()
	defer q.mu.Unlock()
	name := flowOf(key)
	f := q.flows[name]
	if f == nil {
		f = &flow{name: name}
		q.flows[name] = f
	}
	if len(f.keys) == 0 {
		q.active = append(q.active, f)
	}
	f.keys = append(f.keys, waitingKey{key: key, since: q.now()})
	q.len++
}

// Len is the number of waiting keys.
func (q *fairQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.len
}

// Pop takes the head of the active flow with the fewest running reconciles, searching
// round robin from q.next, and counts the key as running until finished is called.
// The workqueue calls Pop only when Len is above zero.
func (q *fairQueue) Pop() queueKey {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.active) == 0 {
		return queueKey{} // not called so by the workqueue
	}
	best := -1
	for i := range len(q.active) {
		at := (q.next + i) % len(q.active)
		if best < 0 || q.active[at].running < q.active[best].running {
			best = at
			if q.active[at].running == 0 {
				break
			}
		}
	}
	f := q.active[best]
	head := f.keys[0]
	f.keys[0] = waitingKey{}
	f.keys = f.keys[1:]
	busy := f.running > 0 || len(f.keys) > 0
	f.running++
	q.len--
	if len(f.keys) == 0 {
		f.keys = nil
		q.active = slices.Delete(q.active, best, best+1)
		q.next = best // the flow after it moved into its place
	} else {
		q.next = best + 1
	}
	if len(q.active) > 0 {
		q.next %= len(q.active)
	} else {
		q.next = 0
	}
	if q.waited != nil {
		q.waited(busy, q.now().Sub(head.since))
	}
	return head.key
}

// finished ends the running count of a key that Pop returned.
func (q *fairQueue) finished(key queueKey) {
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	f := q.flows[flowOf(key)]
	if f == nil {
		return
	}
	if f.running > 0 {
		f.running--
	}
	if f.running == 0 && len(f.keys) == 0 {
		delete(q.flows, f.name)
	}
}

// snapshot returns the state of every flow with keys waiting or running.
func (q *fairQueue) snapshot() []metrics.Flow {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	out := make([]metrics.Flow, 0, len(q.flows))
	for _, f := range q.flows {
		s := metrics.Flow{Name: f.name, Waiting: len(f.keys), Running: f.running}
		if len(f.keys) > 0 {
			s.Oldest = now.Sub(f.keys[0].since)
		}
		out = append(out, s)
	}
	return out
}
