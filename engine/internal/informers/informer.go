package informers

import (
	"context"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// Informer is one watch's cache and the handlers of its events: client-go's Reflector
// lists and watches into a store of ours (reflected.go), which keeps the cache and
// calls every registered handler in turn, in the reflector's goroutine. A shared
// informer adds a queue between the two and gives each handler two goroutines of its
// own and a buffer of 1,024 events. A controller serving a thousand CRDs runs a
// thousand parent informers: the queue and the handler machinery were five of the nine
// goroutines per informer, and 16 KiB of buffer: about 40 MB in all (22 MB of
// goroutine stacks, 16 MB of buffers).
//
// Handlers must therefore be quick and must not wait for the informer: kubecel's only
// queue keys, keep indexes and note deletions. The cache changes and the handlers are
// told under one lock, which AddEventHandler takes too: a handler added while the
// informer runs is given every cached object as an add, then every later change, in
// order.
type Informer struct {
	store    cache.Store
	reflects *reflected
	run      func(context.Context)

	// mu is held while the cache changes and the handlers are told, and while a
	// handler is added or removed.
	mu       sync.Mutex
	handlers []*Registration
}

// Registration is one handler of an Informer.
type Registration struct {
	inf     *Informer
	handler cache.ResourceEventHandler
}

// HasSynced reports whether the handler has been given every object of the informer's
// first list: the informer has synced (a handler added later was given its cache first).
func (r *Registration) HasSynced() bool { return r.inf.HasSynced() }

// newInformer makes the informer of gvr in namespace ("" for all) whose lists and
// watches select by selector, passing what it receives through transform.
func newInformer(client dynamic.Interface, key Key, resync time.Duration, transform cache.TransformFunc) *Informer {
	res := client.Resource(key.GVR).Namespace(key.Namespace)
	tweak := func(o metav1.ListOptions) metav1.ListOptions {
		o.LabelSelector = key.Selector
		return o
	}
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return res.List(ctx, tweak(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, tweak(o))
		},
	}, client)
	inf := &Informer{store: cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc)}
	inf.reflects = &reflected{inf: inf, transform: transform}
	r := cache.NewReflectorWithOptions(lw, &unstructured.Unstructured{}, inf.reflects, cache.ReflectorOptions{
		Name:            key.GVR.String(),
		TypeDescription: key.GVR.String(),
		ResyncPeriod:    resync,
	})
	inf.run = r.RunWithContext
	return inf
}

// Run lists and watches until ctx ends.
func (i *Informer) Run(ctx context.Context) { i.run(ctx) }

// HasSynced reports whether the cache holds the first list and every handler was
// told of it.
func (i *Informer) HasSynced() bool { return i.reflects.synced.Load() }

// GetStore is the informer's cache. It must not be written.
func (i *Informer) GetStore() cache.Store { return i.store }

// AddEventHandler registers h: it is given every cached object as an add now, and every
// event from then on. The error is always nil; it is there for the callers of client-go's
// informers, whose AddEventHandler fails once the informer stopped.
func (i *Informer) AddEventHandler(h cache.ResourceEventHandler) (*Registration, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, o := range i.store.List() {
		h.OnAdd(o, false)
	}
	r := &Registration{inf: i, handler: h}
	// A new slice: a dispatch under way keeps the one it read.
	i.handlers = append(slices.Clip(i.handlers), r)
	return r, nil
}

// RemoveEventHandler unregisters r; it is given no event once this returns.
func (i *Informer) RemoveEventHandler(r *Registration) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.handlers = slices.DeleteFunc(slices.Clone(i.handlers), func(h *Registration) bool { return h == r })
	return nil
}
