package engine

import (
	"k8s.io/client-go/tools/cache"

	"github.com/kubecel/kubecel/engine/internal/informers"
)

// Event handlers only compute a key and enqueue it; all work happens in reconcile. An
// event that only echoes one of our own writes enqueues nothing (informers.Written.Echo).

// asObject unwraps a delete tombstone and returns the cached object, if it is one.
func asObject(obj any) (*informers.Object, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	o, ok := obj.(*informers.Object)
	return o, ok
}

// parentHandler enqueues the parent itself under one rule, and remembers a deleted
// parent's UID for its teardown. selected says whether the informer filters by labels.
func (c *Controller) parentHandler(rule string, selected bool) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		if u, ok := asObject(obj); ok {
			c.queue.Add(queueKey{Rule: rule, Namespace: u.GetNamespace(), Name: u.GetName()})
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(_, newObj any) {
			if u, ok := asObject(newObj); ok && c.written.Echo(statusMemo(rule, u.GetUID()), u, func() { enqueue(newObj) }) {
				return // our own status write: the reconcile that made it saw this state
			}
			enqueue(newObj)
		},
		DeleteFunc: func(obj any) {
			c.parentDeleted(rule, selected, obj)
			enqueue(obj)
		},
	}
}

// setupChildInformer prepares a child informer, shared by every rule that produces its
// kind: an index by parent UID, and a handler that keeps it and enqueues the child's
// parent.
func (c *Controller) setupChildInformer(w *informers.Watch) error {
	w.Children = informers.NewChildIndex()
	enqueue := func(o *informers.Object) {
		if key, ok := parentKey(o); ok && c.rule(key.Rule) != nil {
			c.queue.Add(key)
		}
	}
	// changed handles an add (oldObj nil) or an update.
	changed := func(oldObj, obj any) {
		o, ok := asObject(obj)
		if !ok {
			return
		}
		old, _ := asObject(oldObj)
		if key, ok := informers.StoreKey(o); ok {
			w.Children.Update(key, old, o)
		}
		if old != nil && old.ParentUID() != o.ParentUID() {
			c.unblock(o)
		}
		if c.written.Echo(keyOf(o).String(), o, func() { enqueue(o) }) {
			return // our own write: the reconcile that made it saw this state
		}
		enqueue(o)
	}
	reg, err := w.Informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { changed(nil, obj) },
		UpdateFunc: changed,
		DeleteFunc: func(obj any) {
			o, ok := asObject(obj)
			if !ok {
				return
			}
			if key, ok := informers.StoreKey(obj); ok {
				w.Children.Update(key, o, nil)
			}
			c.written.Forget(keyOf(o).String())
			c.deleting.gone(o.GetUID())
			c.unblock(o)
			enqueue(o)
		},
	})
	if err != nil {
		return err
	}
	w.HandlerSynced = reg.HasSynced
	return nil
}

// unblock requeues the parents that wait for o's name: o was deleted or changed hands.
func (c *Controller) unblock(o *informers.Object) {
	for _, key := range c.waiting.take(keyOf(o).String()) {
		c.queue.Add(key)
	}
}
