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
// Keys wait in flows, one FIFO per flow: the owner of the work (flowName: the tenant a
// namespace label names, the team whose ConfigMap the rule came from, else the
// namespace; a rule's cluster-scoped parents share a few flows). A free worker takes the
// head of the flow with the fewest reconciles running. Among those, a flow that had
// nothing waiting or running when its key came (a fresh flow: a tenant with a small
// change) goes first, oldest first; the others take turns, round robin from the flow
// after the last one served. So while a tenant with many or large parents keeps every
// worker busy, a key of another tenant is taken by the next worker that comes free, and
// a busy tenant's parents take turns: a reconcile that has more writes to send than its
// batch allows yields (see Options.MaxWritesPerReconcile), and its key goes to the back
// of its flow, its flow to the back of the round. One worker is kept for the others: a
// flow runs at most limit reconciles at once (the workers but one), so that a key of a
// flow with nothing running never waits for a busy tenant's batch to end; a tenant alone
// gets every worker but that one.

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

// fairQueue is a workqueue.Queue (the order of the waiting keys). The workqueue calls
// Push, Pop, Touch and Len under its own lock; running counts are also changed by the
// worker (finished), so fairQueue has its own lock.
type fairQueue struct {
	mu    sync.Mutex
	flows map[string]*flow
	// fresh lists the flows that had nothing waiting or running when a key came, oldest
	// first; they have nothing running until served, so they go first. old lists the
	// other flows with waiting keys, in round-robin order; next is the position in old
	// at which the next search starts, and so the back of the round is just before it.
	fresh []*flow
	old   []*flow
	next  int
	len   int
	// running holds the flow each key taken and not finished was taken from (a key that
	// yields is queued again before its worker finishes it, so two may be held).
	running map[queueKey][]*flow
	now     func() time.Time
	// fairnessKey is the namespace label that names tenants (Options.FairnessKey), and
	// owner says who owns a key's work; nil knows nothing but the key.
	fairnessKey string
	owner       func(queueKey) flowOwner
	// limit is the most reconciles one flow runs at once (0: no limit). Keys of a flow
	// at its limit are not counted by Len, so a worker that finds only such keys waits
	// for a key of another flow, or until a reconcile of that flow ends (the worker that
	// ran it then asks again).
	limit int
	// waited, when set, observes each popped key's time in the queue, by whether its flow
	// was busy (another of its keys running or waiting) when the key was taken.
	waited func(busy bool, d time.Duration)
}

// flow is one owner's waiting keys and running count.
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
	return &fairQueue{flows: map[string]*flow{}, running: map[queueKey][]*flow{}, now: time.Now}
}

// Touch is called for a key added again while it waits: it keeps its place.
func (q *fairQueue) Touch(queueKey) {}

// Push adds a key at the back of its flow.
func (q *fairQueue) Push(key queueKey) {
	var o flowOwner
	if q.owner != nil {
		o = q.owner(key) // outside the lock: it reads caches
	}
	name := flowName(key, q.fairnessKey, o)
	q.mu.Lock()
	defer q.mu.Unlock()
	f := q.flows[name]
	if f == nil {
		f = &flow{name: name}
		q.flows[name] = f
	}
	switch {
	case len(f.keys) > 0:
	case f.running == 0:
		q.fresh = append(q.fresh, f)
	default:
		q.toBack(f)
	}
	f.keys = append(f.keys, waitingKey{key: key, since: q.now()})
	q.len++
}

// toBack puts a flow in the round at its back: the search from next reaches it last.
func (q *fairQueue) toBack(f *flow) {
	q.old = slices.Insert(q.old, q.next, f)
	q.next = (q.next + 1) % len(q.old)
}

// Len is the number of waiting keys that a worker may take now: those of flows below
// their limit.
func (q *fairQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.len
	if q.limit > 0 {
		// Fresh flows run nothing; the others are in the round.
		for _, f := range q.old {
			if q.full(f) {
				n -= len(f.keys)
			}
		}
	}
	return n
}

// waiting is the number of waiting keys, those of flows at their limit too.
func (q *fairQueue) waiting() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.len
}

// full reports whether a flow runs as many reconciles as one flow may.
func (q *fairQueue) full(f *flow) bool { return q.limit > 0 && f.running >= q.limit }

// Pop takes the head of the oldest fresh flow, else of the flow in the round with the
// fewest running reconciles (searching from q.next) below its limit, and counts the key
// as running until finished is called. The workqueue calls Pop only when Len is above
// zero, and so when such a flow waits: only Pop adds to the running counts, and the
// workqueue's lock keeps Len and Pop together.
func (q *fairQueue) Pop() queueKey {
	q.mu.Lock()
	defer q.mu.Unlock()
	var f *flow
	switch {
	case len(q.fresh) > 0:
		f = q.fresh[0]
		q.fresh[0] = nil
		q.fresh = q.fresh[1:]
		if len(f.keys) > 1 {
			q.toBack(f)
		}
	case len(q.old) > 0:
		best := -1
		for i := range len(q.old) {
			at := (q.next + i) % len(q.old)
			if q.full(q.old[at]) {
				continue
			}
			if best < 0 || q.old[at].running < q.old[best].running {
				best = at
				if q.old[at].running == 0 {
					break
				}
			}
		}
		if best < 0 {
			return queueKey{} // every flow at its limit: Len said 0, so not called
		}
		f = q.old[best]
		if len(f.keys) == 1 {
			q.old = slices.Delete(q.old, best, best+1)
			q.next = best // the flow after it moved into its place
		} else {
			q.next = best + 1
		}
		if len(q.old) > 0 {
			q.next %= len(q.old)
		} else {
			q.next = 0
		}
	default:
		return queueKey{} // not called so by the workqueue
	}
	head := f.keys[0]
	f.keys[0] = waitingKey{}
	f.keys = f.keys[1:]
	if len(f.keys) == 0 {
		f.keys = nil
	}
	busy := f.running > 0 || len(f.keys) > 0
	f.running++
	q.running[head.key] = append(q.running[head.key], f)
	q.len--
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
	held := q.running[key]
	if len(held) == 0 {
		return
	}
	f := held[0]
	if len(held) == 1 {
		delete(q.running, key)
	} else {
		q.running[key] = held[1:]
	}
	f.running--
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
