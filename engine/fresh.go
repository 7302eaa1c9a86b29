package engine

import (
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// written remembers the server's response to our latest write of each object until the
// informer cache has caught up with it. Without it, a reconcile that runs between our
// write and its watch event would compare against the stale cached object and write the
// same thing again.
type written struct {
	mu   sync.Mutex
	objs map[string]*unstructured.Unstructured
}

func newWritten() *written { return &written{objs: map[string]*unstructured.Unstructured{}} }

func (w *written) remember(key string, obj *unstructured.Unstructured) {
	if obj == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.objs[key] = obj
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
		delete(w.objs, key)
		return cached
	}
	return mine
}

func (w *written) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.objs, key)
}

func olderThan(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x < y
}
