package engine

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/engine/internal/watch"
)

// watchEvents is what the watches tell the controller (watch.Events): keys for its
// queue, and the deletes and changes its reconciler and rollouts keep track of.
type watchEvents struct{ c *Controller }

var _ watch.Events = watchEvents{}

func (e watchEvents) Enqueue(key watch.Key) { e.c.queue.Add(key) }

func (e watchEvents) Running(rule string) bool { return e.c.view.Load().get(rule) != nil }

func (e watchEvents) ParentDeleted(key watch.Key, uid types.UID, sure, orphan bool) {
	e.c.reconciler.ParentDeleted(key, uid, sure, orphan)
}

func (e watchEvents) ChildLeft(o *informers.Object, deleted bool) []watch.Key {
	return e.c.reconciler.ChildLeft(o, deleted)
}

// ParentChanged tells a rollout under way of its parents' events: only such a rollout
// reads its parents (their conditions).
func (e watchEvents) ParentChanged(rule string) {
	if rr := e.c.view.Load().running[rule]; rr != nil && rr.rollout != nil && rr.rollout.Stable() != nil {
		e.c.life.rollouts.Notice(rule)
	}
}
