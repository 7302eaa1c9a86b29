package informers

import (
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Written remembers the server's response to our latest write of each object until the
// informer cache has caught up with it. Without it, a reconcile that runs between our
// write and its watch event would see the stale cached object (or none), compute a
// different status or write the same child again. Responses are held in their cached
// form: while a large cluster converges, the watch events lag and thousands wait here.
//
// It also tells the watch events that only echo our own writes (echo.go).
type Written struct {
	mu       sync.Mutex
	objs     map[string]*Object
	byParent map[string]map[string]bool // parent UID -> keys of its children in objs
	// sending counts our writes of a key in flight; held keeps the events of the key
	// that arrived meanwhile, until the response tells whether they were its echo.
	sending map[string]int
	held    map[string][]heldEvent
	// prove decides which responses are children (NewObject), as the caches do.
	prove Prover
}

// NewWritten makes an empty memory of writes that takes kubecel's labels only from
// the responses prove accepts.
func NewWritten(prove Prover) *Written {
	return &Written{objs: map[string]*Object{}, byParent: map[string]map[string]bool{},
		sending: map[string]int{}, held: map[string][]heldEvent{}, prove: prove}
}

// rememberLocked keeps obj, the cached form of the server's response to a write of key
// (Settle makes it).
func (w *Written) rememberLocked(key string, obj *Object) {
	w.objs[key] = obj
	if uid := obj.parentUID; uid != "" {
		if w.byParent[uid] == nil {
			w.byParent[uid] = map[string]bool{}
		}
		w.byParent[uid][key] = true
	}
}

// Newer returns our last write of key, decoded, when it is newer than the cached object,
// and nil when the cache is as new (then the write is forgotten). Resource versions are
// etcd revisions; when one does not parse as a number the cache wins, as it would
// without this memory.
func (w *Written) Newer(key string, cached versioned) *unstructured.Unstructured {
	w.mu.Lock()
	defer w.mu.Unlock()
	mine, ok := w.objs[key]
	if !ok {
		return nil
	}
	if cached.GetUID() != mine.GetUID() || !olderThan(cached.GetResourceVersion(), mine.GetResourceVersion()) {
		w.forgetLocked(key)
		return nil
	}
	u, err := mine.Decode()
	if err != nil {
		w.forgetLocked(key)
		return nil
	}
	return u
}

// Children returns the remembered writes of a parent's children, decoded: among them
// the objects we created that the cache does not show yet.
func (w *Written) Children(parentUID string) []*unstructured.Unstructured {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*unstructured.Unstructured
	for key := range w.byParent[parentUID] {
		if u, err := w.objs[key].Decode(); err == nil {
			out = append(out, u)
		}
	}
	return out
}

func (w *Written) Forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forgetLocked(key)
}

func (w *Written) forgetLocked(key string) {
	obj, ok := w.objs[key]
	if !ok {
		return
	}
	delete(w.objs, key)
	if uid := obj.parentUID; uid != "" {
		delete(w.byParent[uid], key)
		if len(w.byParent[uid]) == 0 {
			delete(w.byParent, uid)
		}
	}
}

// versioned is what Newer compares. *unstructured.Unstructured and *Object are.
type versioned interface {
	GetUID() types.UID
	GetResourceVersion() string
}

func olderThan(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x < y
}
