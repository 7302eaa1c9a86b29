package engine

import (
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// written remembers the server's response to our latest write of each object until the
// informer cache has caught up with it. Without it, a reconcile that runs between our
// write and its watch event would see the stale cached object (or none), compute a
// different status or write the same child again.
type written struct {
	mu       sync.Mutex
	objs     map[string]*unstructured.Unstructured
	byParent map[string]map[string]bool // parent UID -> keys of its children in objs
}

func newWritten() *written {
	return &written{objs: map[string]*unstructured.Unstructured{}, byParent: map[string]map[string]bool{}}
}

func (w *written) remember(key string, obj *unstructured.Unstructured) {
	if obj == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.objs[key] = obj
	if uid := obj.GetLabels()[LabelParentUID]; uid != "" {
		if w.byParent[uid] == nil {
			w.byParent[uid] = map[string]bool{}
		}
		w.byParent[uid][key] = true
	}
}

// freshest returns whichever of the cached object and our last write is newer, and
// forgets the write once the cache has it. Resource versions are etcd revisions; when
// one does not parse as a number the cache wins, as it would without this memory.
func (w *written) freshest(key string, cached *unstructured.Unstructured) *unstructured.Unstructured {
	w.mu.Lock()
	defer w.mu.Unlock()
	mine, ok := w.objs[key]
	if !ok {
		return cached
	}
	if cached != nil && (cached.GetUID() != mine.GetUID() || !olderThan(cached.GetResourceVersion(), mine.GetResourceVersion())) {
		w.forgetLocked(key)
		return cached
	}
	return mine
}

// children returns the remembered writes of a parent's children whose keys are not in
// seen: objects we created that the cache does not show yet.
func (w *written) children(parentUID string, seen map[string]bool) []*unstructured.Unstructured {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*unstructured.Unstructured
	for key := range w.byParent[parentUID] {
		if !seen[key] {
			out = append(out, w.objs[key])
		}
	}
	return out
}

func (w *written) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forgetLocked(key)
}

func (w *written) forgetLocked(key string) {
	obj, ok := w.objs[key]
	if !ok {
		return
	}
	delete(w.objs, key)
	if uid := obj.GetLabels()[LabelParentUID]; uid != "" {
		delete(w.byParent[uid], key)
		if len(w.byParent[uid]) == 0 {
			delete(w.byParent, uid)
		}
	}
}

func olderThan(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x < y
}
