package informers

import (
	"sync/atomic"

	"k8s.io/client-go/tools/cache"
)

// reflected is the store an Informer's reflector writes to: it transforms what it is
// given, keeps it in the informer's cache and tells the informer's handlers, the
// change and the telling under the informer's lock. It tells them what a shared
// informer would: an add of an object new to the cache, an update of one it held, a
// delete, and on a relist (Replace) an update or add of every listed object and a
// delete, as cache.DeletedFinalStateUnknown, of every cached object the list no
// longer has.
type reflected struct {
	inf       *Informer
	transform cache.TransformFunc // nil: objects are cached as given
	// synced is set once the first list is cached and told.
	synced atomic.Bool
}

var _ cache.ReflectorStore = (*reflected)(nil)

func (r *reflected) cached(obj any) (any, error) {
	if r.transform == nil {
		return obj, nil
	}
	return r.transform(obj)
}

// Add caches an added or changed object.
func (r *reflected) Add(obj any) error {
	o, err := r.cached(obj)
	if err != nil {
		return err
	}
	i := r.inf
	i.mu.Lock()
	defer i.mu.Unlock()
	return r.put(o, false)
}

// Update caches a changed object.
func (r *reflected) Update(obj any) error { return r.Add(obj) }

// put caches o and tells the handlers; i.mu is held.
func (r *reflected) put(o any, initial bool) error {
	i := r.inf
	old, had, err := i.store.Get(o)
	if err != nil {
		return err
	}
	if err := i.store.Update(o); err != nil {
		return err
	}
	for _, h := range i.handlers {
		if had {
			h.handler.OnUpdate(old, o)
		} else {
			h.handler.OnAdd(o, initial)
		}
	}
	return nil
}

// Delete drops a deleted object from the cache.
func (r *reflected) Delete(obj any) error {
	o, err := r.cached(obj)
	if err != nil {
		return err
	}
	i := r.inf
	i.mu.Lock()
	defer i.mu.Unlock()
	if err := i.store.Delete(o); err != nil {
		return err
	}
	for _, h := range i.handlers {
		h.handler.OnDelete(o)
	}
	return nil
}

// Replace makes the cache what a list returned.
func (r *reflected) Replace(list []any, _ string) error {
	objs := make([]any, 0, len(list))
	for _, obj := range list {
		o, err := r.cached(obj)
		if err != nil {
			return err
		}
		objs = append(objs, o)
	}
	i := r.inf
	i.mu.Lock()
	defer i.mu.Unlock()
	listed := make(map[string]bool, len(objs))
	initial := !r.synced.Load()
	for _, o := range objs {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(o)
		if err != nil {
			return err
		}
		listed[key] = true
		if err := r.put(o, initial); err != nil {
			return err
		}
	}
	for _, key := range i.store.ListKeys() {
		if listed[key] {
			continue
		}
		old, ok, err := i.store.GetByKey(key)
		if err != nil || !ok {
			continue
		}
		if err := i.store.Delete(old); err != nil {
			return err
		}
		gone := cache.DeletedFinalStateUnknown{Key: key, Obj: old}
		for _, h := range i.handlers {
			h.handler.OnDelete(gone)
		}
	}
	r.synced.Store(true)
	return nil
}

// Resync tells the handlers of every cached object again, as updates to itself.
func (r *reflected) Resync() error {
	i := r.inf
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, o := range i.store.List() {
		for _, h := range i.handlers {
			h.handler.OnUpdate(o, o)
		}
	}
	return nil
}
