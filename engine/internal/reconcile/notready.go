package reconcile

import (
	"sync"
	"time"

	"github.com/kubecel/kubecel/engine/internal/metrics"
	"github.com/kubecel/kubecel/engine/internal/watch"
)

// notReady remembers since when each parent has been not Ready, as its reconciles found
// it, for the kubecel_parents_not_ready gauges: a parent enters at the first reconcile
// that finds it not Ready and leaves at the first that finds it Ready. A scrape also
// drops the parents that are gone, whose rule stopped, or that another replica serves
// now, so that the gauges never count a parent nobody reconciles here.
type notReady struct {
	mu    sync.Mutex
	since map[watch.Key]time.Time
}

func newNotReady() *notReady { return &notReady{since: map[watch.Key]time.Time{}} }

// observe records what a reconcile found.
func (n *notReady) observe(key watch.Key, ready bool, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ready {
		delete(n.since, key)
	} else if _, ok := n.since[key]; !ok {
		n.since[key] = now
	}
}

// forget drops a parent that is gone.
func (n *notReady) forget(key watch.Key) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.since, key)
}

// read returns the count and the longest time not Ready of every rule live says is
// running (a rule with every parent Ready reads 0), after dropping the parents live
// says are no longer this replica's.
func (n *notReady) read(rules []string, live func(watch.Key) bool, now time.Time) []metrics.NotReady {
	byRule := make(map[string]*metrics.NotReady, len(rules))
	out := make([]metrics.NotReady, len(rules))
	for i, r := range rules {
		out[i].Rule = r
		byRule[r] = &out[i]
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for key, since := range n.since {
		r := byRule[key.Rule]
		if r == nil || !live(key) {
			delete(n.since, key)
			continue
		}
		r.Count++
		r.Oldest = max(r.Oldest, now.Sub(since))
	}
	return out
}

// NotReady reads the kubecel_parents_not_ready gauges of the rules named, after
// dropping the parents live says are no longer this replica's.
func (c *Reconciler) NotReady(rules []string, live func(watch.Key) bool) []metrics.NotReady {
	return c.notReady.read(rules, live, time.Now())
}
