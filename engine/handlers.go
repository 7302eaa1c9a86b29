package engine

import (
	"k8s.io/client-go/tools/cache"
)

// Event handlers only compute a key and enqueue it; all work happens in reconcile.

// asObject unwraps a delete tombstone and returns the cached object, if it is one.
func asObject(obj any) (*cachedObject, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	o, ok := obj.(*cachedObject)
	return o, ok
}

// parentHandler enqueues the parent itself under one rule, and remembers a deleted
// parent's UID for its teardown. selected says whether the informer filters by labels.
func (c *Controller) parentHandler(rule string, selected bool) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		if u, ok := asObject(obj); ok {
			c.queue.Add(Key{Rule: rule, Namespace: u.GetNamespace(), Name: u.GetName()})
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, newObj any) { enqueue(newObj) },
		DeleteFunc: func(obj any) {
			c.parentDeleted(rule, selected, obj)
			enqueue(obj)
		},
	}
}

// setupChildInformer prepares a child informer, shared by every rule that produces its
// kind: an index by parent UID, and a handler that keeps it and enqueues the child's
// parent.
func (c *Controller) setupChildInformer(w *watch) error {
	w.children = newChildIndex()
	enqueue := func(o *cachedObject) {
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
		if key, ok := storeKey(o); ok {
			w.children.update(key, old, o)
		}
		if old != nil && old.parentUID != o.parentUID {
			c.unblock(o)
		}
		enqueue(o)
	}
	reg, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { changed(nil, obj) },
		UpdateFunc: changed,
		DeleteFunc: func(obj any) {
			o, ok := asObject(obj)
			if !ok {
				return
			}
			if key, ok := storeKey(obj); ok {
				w.children.update(key, o, nil)
			}
			c.written.forget(keyOf(o).String())
			c.unblock(o)
			enqueue(o)
		},
	})
	if err != nil {
		return err
	}
	w.handlerSynced = reg.HasSynced
	return nil
}

// unblock requeues the parents that wait for o's name: o was deleted or changed hands.
func (c *Controller) unblock(o *cachedObject) {
	for _, key := range c.waiting.take(keyOf(o).String()) {
		c.queue.Add(key)
	}
}
