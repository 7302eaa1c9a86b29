package watch

import (
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kubecel/kubecel/engine/internal/informers"
)

// Event handlers only compute a key and queue it (Events.Enqueue); all work happens in
// the reconcile. An event that only echoes one of our own writes queues nothing
// (informers.Written.Echo).

// Events is what the watches tell the rest of the controller (the engine's
// implementation is engine.watchEvents). Its methods are called from the informers'
// handlers: they must return at once.
type Events interface {
	// Enqueue queues a parent's key.
	Enqueue(Key)
	// Running reports whether a rule runs: a child's event queues its parent only then.
	Running(rule string) bool
	// ParentDeleted is told of every parent a rule's informer saw deleted, with its UID.
	// sure is set when the delete came from a watch event on an informer without a
	// label selector: the parent was deleted, not relabelled out of the selector or
	// missed during a relist. orphan is set when it was deleted with the orphan
	// propagation policy (informers.Object.DeletedWithOrphan).
	ParentDeleted(key Key, uid types.UID, sure, orphan bool)
	// ChildLeft is told of a child deleted (deleted) or whose parent changed, and
	// returns the keys of the parents that waited for its name.
	ChildLeft(o *informers.Object, deleted bool) []Key
	// ParentChanged is told of every event of a rule's parents, the echoes of the
	// controller's own writes included (a rollout reads the parents' conditions).
	ParentChanged(rule string)
}

// asObject unwraps a delete tombstone and returns the cached object, if it is one.
func asObject(obj any) (*informers.Object, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	o, ok := obj.(*informers.Object)
	return o, ok
}

// parentHandler queues the parent itself under one rule, and tells of a deleted
// parent. selected says whether the informer filters by labels.
func (w *Watcher) parentHandler(rule string, selected bool) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		if u, ok := asObject(obj); ok {
			w.events.Enqueue(KeyFor(rule, u))
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			w.events.ParentChanged(rule)
			enqueue(obj)
		},
		UpdateFunc: func(_, newObj any) {
			w.events.ParentChanged(rule)
			if u, ok := asObject(newObj); ok && w.written.Echo(StatusMemo(rule, u.GetUID()), u, func() { enqueue(newObj) }) {
				return // our own status write: the reconcile that made it saw this state
			}
			enqueue(newObj)
		},
		DeleteFunc: func(obj any) {
			w.events.ParentChanged(rule)
			_, unknown := obj.(cache.DeletedFinalStateUnknown)
			if o, ok := asObject(obj); ok {
				w.events.ParentDeleted(KeyFor(rule, o), o.GetUID(), !unknown && !selected, o.DeletedWithOrphan())
			}
			enqueue(obj)
		},
	}
}

// StatusMemo is the key under which the response to a rule's status write to a parent
// is remembered (informers.Written).
func StatusMemo(rule string, uid types.UID) string { return "status/" + rule + "/" + string(uid) }

// setupChildInformer prepares a child informer, shared by every rule that produces its
// kind: an index by parent UID, and a handler that keeps it and queues the child's
// parent.
func (w *Watcher) setupChildInformer(cw *informers.Watch) error {
	cw.Children = informers.NewChildIndex()
	enqueue := func(o *informers.Object) {
		if key, ok := parentOf(o); ok && w.events.Running(key.Rule) {
			w.events.Enqueue(key)
		}
	}
	left := func(o *informers.Object, deleted bool) {
		for _, key := range w.events.ChildLeft(o, deleted) {
			w.events.Enqueue(key)
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
			cw.Children.Update(key, old, o)
		}
		if old != nil && old.ParentUID() != o.ParentUID() {
			left(o, false)
		}
		if w.written.Echo(KeyOf(o).String(), o, func() { enqueue(o) }) {
			return // our own write: the reconcile that made it saw this state
		}
		enqueue(o)
	}
	reg, err := cw.Informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { changed(nil, obj) },
		UpdateFunc: changed,
		DeleteFunc: func(obj any) {
			o, ok := asObject(obj)
			if !ok {
				return
			}
			if key, ok := informers.StoreKey(obj); ok {
				cw.Children.Update(key, o, nil)
			}
			w.written.Forget(KeyOf(o).String())
			left(o, true)
			enqueue(o)
		},
	})
	if err != nil {
		return err
	}
	cw.HandlerSynced = reg.HasSynced
	return nil
}
