package informers

import (
	"context"
	"sync"
	"time"

	"github.com/kubecel/kubecel/rules/contract"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// Key identifies one informer: a GVR, optionally one namespace, and a label selector.
type Key struct {
	GVR       schema.GroupVersionResource
	Namespace string
	Selector  string
	// Schema, when set, tells apart the watches of one resource under two schemas of
	// its CRD (watch.Rule.ParentSchema): each lists the objects afresh.
	Schema string
	// Whole, when set, lists the buckets (contract.BucketLabel values, comma
	// separated, or NoBuckets) whose objects the cache holds whole; it holds every other
	// object as a stub (stubs.go). "" holds every object whole.
	Whole string
}

// Watch is one running informer, shared by reference count.
type Watch struct {
	key      Key
	Informer *Informer
	cancel   context.CancelFunc
	refs     int

	// Child informers only (set by the setup function given to Acquire): the parent
	// index, and whether the handler that maintains it has seen the initial list.
	Children      *ChildIndex
	HandlerSynced func() bool
}

// Key is what the informer watches.
func (w *Watch) Key() Key { return w.key }

// Synced reports whether the informer and, for a child informer, its index have synced.
func (w *Watch) Synced() bool {
	return w.Informer.HasSynced() && (w.HandlerSynced == nil || w.HandlerSynced())
}

// Set owns the informers. Unlike the dynamic informer factory, which stops all of
// its informers at once, each watch here stops when its last user releases it.
type Set struct {
	client dynamic.Interface
	resync time.Duration
	prove  Prover
	// orphans are the objects seen being deleted with the orphan policy.
	orphans orphans

	mu      sync.Mutex
	watches map[Key]*Watch
}

// NewSet makes an empty set whose caches take kubecel's labels only from the objects
// prove accepts.
func NewSet(client dynamic.Interface, resync time.Duration, prove Prover) *Set {
	return &Set{client: client, resync: resync, prove: prove, watches: map[Key]*Watch{}}
}

// acquire returns the running informer for key, starting it when it is new. setup runs
// once, before the informer starts, to add indexers and handlers that belong to the
// informer itself rather than to one user.
func (s *Set) Acquire(ctx context.Context, key Key, setup func(*Watch) error) (*Watch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.watches[key]; ok {
		w.refs++
		return w, nil
	}
	whole, err := wholeFilter(key.Whole)
	if err != nil {
		return nil, err
	}
	inf := newInformer(s.client, key, s.resync, s.transform(whole))
	w := &Watch{key: key, Informer: inf, refs: 1}
	if setup != nil {
		if err := setup(w); err != nil {
			return nil, err
		}
	}
	// The informer lives until its last release, not as long as the caller's request:
	// keep the caller's values (logger) but not its cancellation.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.cancel = cancel
	s.watches[key] = w
	go inf.Run(wctx)
	return w, nil
}

// release drops one reference and stops the informer with the last one.
func (s *Set) Release(w *Watch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.refs--
	if w.refs > 0 {
		return
	}
	w.cancel()
	delete(s.watches, w.key)
}

// transform is the transform of an informer whose cache holds whole the objects that
// whole accepts (every object when nil), and the others as stubs (stubs.go).
func (s *Set) transform(whole func(namespace, name string) bool) cache.TransformFunc {
	if whole == nil {
		return s.toCache
	}
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || whole(u.GetNamespace(), u.GetName()) {
			return s.toCache(obj)
		}
		o := newStub(u)
		o.orphan = s.orphans.note(u)
		return o, nil
	}
}

// toCache is the informers' transform: decoded objects from lists and watches enter the
// caches trimmed and in their cached form, marked when they are being deleted with the
// orphan policy (orphans.go).
func (s *Set) toCache(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	Trim(u)
	o, err := NewObject(u, s.prove)
	if err != nil {
		return nil, err
	}
	o.orphan = s.orphans.note(u)
	return o, nil
}

// Trim drops what kubecel never reads before an object enters a cache: the
// managedFields entries of other managers and kubectl's last-applied annotation. Our own
// entries (contract.FieldManager and each rule's contract.ParentFieldManager) stay: they tell which fields
// an apply would remove.
//
// It edits the freshly decoded maps in place. Going through GetManagedFields and
// SetManagedFields instead converts every entry to JSON and back and deep-copies the
// result: that was the largest single allocation site of a converging controller.
func Trim(u *unstructured.Unstructured) {
	md, ok := u.Object["metadata"].(map[string]any)
	if !ok {
		return
	}
	if mf, ok := md["managedFields"].([]any); ok {
		kept := make([]any, 0, 1)
		for _, e := range mf {
			if m, ok := e.(map[string]any); ok && contract.IsOurManager(managerOf(m)) {
				kept = append(kept, e)
			}
		}
		if len(kept) == 0 {
			delete(md, "managedFields")
		} else {
			md["managedFields"] = kept
		}
	}
	if ann, ok := md["annotations"].(map[string]any); ok {
		delete(ann, "kubectl.kubernetes.io/last-applied-configuration")
	}
}

func managerOf(entry map[string]any) string {
	m, _ := entry["manager"].(string)
	return m
}

// Copies counts, for each object of gvr that the set's informers hold (by store key),
// how many of them hold it: every object is cached once when every count is 1.
func (s *Set) Copies(gvr schema.GroupVersionResource) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for key, w := range s.watches {
		if key.GVR != gvr {
			continue
		}
		for _, k := range w.Informer.GetStore().ListKeys() {
			out[k]++
		}
	}
	return out
}
