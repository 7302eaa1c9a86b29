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

// parentHandler enqueues the parent itself under one rule.
func (c *Controller) parentHandler(rule string) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		if u, ok := asObject(obj); ok {
			c.queue.Add(Key{Rule: rule, Namespace: u.GetNamespace(), Name: u.GetName()})
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, newObj any) { enqueue(newObj) },
		DeleteFunc: enqueue,
	}
}

// setupChildInformer prepares a child informer, shared by every rule that produces its
// kind: an index by parent UID, and a handler that enqueues the child's parent.
func (c *Controller) setupChildInformer(inf cache.SharedIndexInformer) error {
	err := inf.AddIndexers(cache.Indexers{parentIndex: func(obj any) ([]string, error) {
		u, ok := obj.(*cachedObject)
		if !ok {
			return nil, nil
		}
		if u.parentUID != "" {
			return []string{u.parentUID}, nil
		}
		return nil, nil
	}})
	if err != nil {
		return err
	}
	enqueue := func(obj any) {
		u, ok := asObject(obj)
		if !ok {
			return
		}
		if key, ok := parentKey(u); ok && c.rule(key.Rule) != nil {
			c.queue.Add(key)
		}
	}
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, newObj any) { enqueue(newObj) },
		DeleteFunc: func(obj any) {
			if u, ok := asObject(obj); ok {
				c.written.forget(keyOf(u).String())
			}
			enqueue(obj)
		},
	})
	return err
}
