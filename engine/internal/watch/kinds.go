package watch

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kinds remembers what the REST mapper said about each resource and kind until the next
// Reset. A lookup in client-go's discovery mapper goes through every group it knows:
// with a thousand CRDs, one lookup allocated about 15 KB, and starting a thousand rules
// looked up some 4,000 kinds (46 MB, and the CPU to make and collect it). Only answers
// are remembered; a failed lookup asks the mapper again, which may refresh discovery.
type kinds struct {
	mapper meta.ResettableRESTMapper

	mu sync.Mutex
	// gen counts the resets: an answer the mapper gave before a reset is not kept.
	gen   uint64
	byGVR map[schema.GroupVersionResource]Kind
	byGVK map[schema.GroupVersionKind]Kind
}

func newKinds(mapper meta.ResettableRESTMapper) *kinds {
	return &kinds{mapper: mapper, byGVR: map[schema.GroupVersionResource]Kind{}, byGVK: map[schema.GroupVersionKind]Kind{}}
}

// reset forgets every answer, and the mapper's.
func (k *kinds) reset() {
	k.mu.Lock()
	k.gen++
	clear(k.byGVR)
	clear(k.byGVK)
	k.mu.Unlock()
	k.mapper.Reset()
}

// forResource is the kind of gvr.
func (k *kinds) forResource(gvr schema.GroupVersionResource) (Kind, error) {
	k.mu.Lock()
	got, ok := k.byGVR[gvr]
	gen := k.gen
	k.mu.Unlock()
	if ok {
		return got, nil
	}
	gvk, err := k.mapper.KindFor(gvr)
	if err != nil {
		return Kind{}, err
	}
	got, err = k.forKind(gvk)
	if err != nil {
		return Kind{}, err
	}
	k.keep(gen, func() { k.byGVR[gvr] = got })
	return got, nil
}

// forKind is what the mapper says about gvk.
func (k *kinds) forKind(gvk schema.GroupVersionKind) (Kind, error) {
	k.mu.Lock()
	got, ok := k.byGVK[gvk]
	gen := k.gen
	k.mu.Unlock()
	if ok {
		return got, nil
	}
	m, err := k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return Kind{}, err
	}
	got = Kind{GVK: gvk, GVR: m.Resource, Namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}
	k.keep(gen, func() { k.byGVK[gvk] = got })
	return got, nil
}

// keep runs put under the lock unless the answer it keeps is older than a reset.
func (k *kinds) keep(gen uint64, put func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.gen == gen {
		put()
	}
}
