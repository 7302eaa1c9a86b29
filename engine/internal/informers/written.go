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
// different status or write the same child again. Responses are held as cached
// objects, trimmed, as JSON text, but not compressed (newPlainObject): while a large
// cluster converges, the watch events lag and thousands wait here, but most are
// forgotten unread.
//
// It also tells the watch events that only echo our own writes (Echo).
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

// A watch event that shows one of our own writes, the object at exactly the resource
// version our write returned, brings nothing new to the reconcile that made the write:
// it went on with the server's response. Such echoes are told apart here, so that the
// event handlers do not requeue a parent for each of its children's and its status's
// echoes (which made every parent converge in two reconciles, the second deciding,
// after decoding the parent and its children and evaluating the rule, that nothing had
// changed).
//
// The echo and the response race: the watch event may be delivered before the response
// is decoded. So a write is announced before it is sent (Sending); an event of the key
// that arrives while it is in flight is held back, and the response (Settle) drops it
// when it was the echo and replays it otherwise.

// heldEvent is a watch event held back while our write of its key was in flight.
type heldEvent struct {
	uid    types.UID
	rv     string
	replay func()
}

// Sending announces a write of key: until Settle, Echo holds back the key's events.
func (w *Written) Sending(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sending[key]++
}

// Settle ends a write announced by Sending. got is the server's response, nil when the
// write failed. It is trimmed in place, as the informers trim what they cache, so the
// caller goes on with what a cache would show, and remembered in its cached form until
// the cache catches up, unless its echo was already held back (then the cache has it).
// Held events that were not got's echo are replayed once no write of the key is in
// flight.
func (w *Written) Settle(key string, got *unstructured.Unstructured) {
	var obj *Object
	if got != nil {
		Trim(got)
		// Not remembered when it cannot be encoded: the next reconcile reads the
		// cache, as without this memory.
		obj, _ = newPlainObject(got, w.prove)
	}
	w.mu.Lock()
	if w.sending[key]--; w.sending[key] <= 0 {
		delete(w.sending, key)
	}
	echoed := false
	var rest []heldEvent
	for _, e := range w.held[key] {
		if obj != nil && e.uid == obj.GetUID() && e.rv == obj.GetResourceVersion() {
			echoed = true
			continue
		}
		rest = append(rest, e)
	}
	var replay []heldEvent
	if w.sending[key] > 0 {
		w.held[key] = rest // they may echo the write still in flight
	} else {
		delete(w.held, key)
		replay = rest
	}
	if obj != nil && !echoed {
		w.rememberLocked(key, obj)
	}
	w.mu.Unlock()
	for _, e := range replay {
		e.replay()
	}
}

// Echo reports whether the watch event of key showing cached is ours to ignore: the
// echo of our last write of it (which the cache has now caught up with, so the write is
// forgotten), or an event that arrived while a write of key is in flight (held back:
// Settle calls replay if it turns out not to be the echo). Otherwise the caller handles
// the event.
func (w *Written) Echo(key string, cached versioned, replay func()) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sending[key] > 0 {
		w.held[key] = append(w.held[key], heldEvent{uid: cached.GetUID(), rv: cached.GetResourceVersion(), replay: replay})
		return true
	}
	mine, ok := w.objs[key]
	if !ok || mine.GetUID() != cached.GetUID() || mine.GetResourceVersion() != cached.GetResourceVersion() {
		return false
	}
	w.forgetLocked(key)
	return true
}
