package reconcile

import (
	"time"

	"github.com/kubecel/kubecel/engine/internal/metrics"
	"github.com/kubecel/kubecel/engine/internal/watch"
)

// NotReady reads the kubecel_parents_not_ready gauges of the rules named, after
// dropping the parents live says are no longer this replica's (memory.notReady).
func (c *Reconciler) NotReady(rules []string, live func(watch.Key) bool) []metrics.NotReady {
	return c.memory.notReady(rules, live, time.Now())
}
