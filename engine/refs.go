package engine

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/rules"
)

// This file gives a rule's refs their watches and serves the rule's lookups from them.
// Ref informers see every object of their kind in the namespaces the rule reads (they
// are not label-selected like children's), and are shared by key with every rule, and
// with parent informers of the same resource and namespace.

// refKind is one ref of a running rule: its kind as discovery says, and its watches by
// namespace ("" for every namespace).
type refKind struct {
	kindInfo
	ref     *rules.Ref
	watches map[string]*informers.Watch
	regs    map[string]cache.ResourceEventHandlerRegistration
}

// resolveRefs finds the kind of every ref of the rule, and refuses a namespaced parent's
// ref of a cluster-scoped kind that the rule could not check at load.
func (c *Controller) resolveRefs(st *ruleState) error {
	for _, ref := range st.rule.Refs {
		info, err := c.kindInfo(ref.GVK)
		if err != nil {
			return fmt.Errorf("ref %q kind %s: %w", ref.ID, ref.GVK, err)
		}
		if st.parent.Namespaced && !info.Namespaced && !ref.CrossNamespace && ref.GVK.GroupKind() != (schema.GroupKind{Kind: "Namespace"}) {
			return fmt.Errorf("ref %q: %s is cluster-scoped, and the parent is namespaced: reading it needs crossNamespace: true on the ref", ref.ID, ref.GVK.Kind)
		}
		st.refs = append(st.refs, &refKind{kindInfo: info, ref: ref, watches: map[string]*informers.Watch{},
			regs: map[string]cache.ResourceEventHandlerRegistration{}})
	}
	return nil
}

// watchRefs acquires the informers of the rule's refs and routes their events to the
// parents that read the objects.
func (c *Controller) watchRefs(ctx context.Context, st *ruleState) error {
	for _, rk := range st.refs {
		namespaces := []string{""}
		if rk.Namespaced {
			namespaces = st.rule.RefNamespaces(rk.ref)
		}
		for _, ns := range namespaces {
			if _, ok := rk.watches[ns]; ok {
				continue
			}
			w, err := c.watches.Acquire(ctx, informers.Key{GVR: rk.GVR, Namespace: ns}, nil)
			if err != nil {
				return err
			}
			rk.watches[ns] = w
			reg, err := w.Informer.AddEventHandler(st.refHandler(c, rk.GVK.GroupKind()))
			if err != nil {
				return err
			}
			rk.regs[ns] = reg
		}
	}
	return nil
}

// releaseRefs removes the rule's ref handlers and releases its ref informers.
func (c *Controller) releaseRefs(st *ruleState) {
	for _, rk := range st.refs {
		for ns, w := range rk.watches {
			if reg, ok := rk.regs[ns]; ok {
				_ = w.Informer.RemoveEventHandler(reg)
			}
			c.watches.Release(w)
		}
	}
}

// refsSynced reports whether every ref informer of the rule has synced.
func (st *ruleState) refsSynced() bool {
	for _, rk := range st.refs {
		for _, w := range rk.watches {
			if !w.Synced() {
				return false
			}
		}
	}
	return true
}

// refHandler enqueues the parents of the rule that read an object of kind gk that was
// added, changed or deleted.
func (st *ruleState) refHandler(c *Controller, gk schema.GroupKind) cache.ResourceEventHandler {
	changed := func(oldObj, newObj any) {
		st.refIndex.event()
		for _, key := range st.refIndex.readers(gk, oldObj, newObj) {
			c.queue.Add(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { changed(nil, obj) },
		UpdateFunc: changed,
		DeleteFunc: func(obj any) { changed(obj, nil) },
	}
}

// cachedRefs is a rules.RefSource over a rule's ref informers.
type cachedRefs struct{ st *ruleState }

// watch returns the informer that holds objects of gvk in namespace.
func (s cachedRefs) watch(gvk schema.GroupVersionKind, namespace string) (*informers.Watch, bool, error) {
	for _, rk := range s.st.refs {
		if rk.GVK.GroupKind() != gvk.GroupKind() {
			continue
		}
		w := rk.watches[""]
		if rk.Namespaced && w == nil {
			w = rk.watches[namespace]
		}
		if w == nil {
			continue
		}
		if !w.Synced() {
			return nil, false, fmt.Errorf("the cache of %s has not synced yet", rk.GVR.Resource)
		}
		return w, rk.Namespaced, nil
	}
	return nil, false, fmt.Errorf("%s in namespace %q is not watched for this rule's refs", gvk.Kind, namespace)
}

// Get implements rules.RefSource.
func (s cachedRefs) Get(_ context.Context, gvk schema.GroupVersionKind, namespace, name string) (map[string]any, bool, error) {
	w, namespaced, err := s.watch(gvk, namespace)
	if err != nil {
		return nil, false, err
	}
	key := name
	if namespaced && namespace != "" {
		key = namespace + "/" + name
	}
	obj, ok, err := w.Informer.GetStore().GetByKey(key)
	if err != nil || !ok {
		return nil, false, err
	}
	u, err := obj.(*informers.Object).Decode()
	if err != nil {
		return nil, false, err
	}
	return u.Object, true, nil
}

// List implements rules.RefSource.
func (s cachedRefs) List(_ context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]map[string]any, error) {
	w, namespaced, err := s.watch(gvk, namespace)
	if err != nil {
		return nil, err
	}
	objs := w.Informer.GetStore().List()
	// A stable order, so that CEL over the list gives the same children every time.
	sort.Slice(objs, func(i, j int) bool {
		a, b := objs[i].(*informers.Object), objs[j].(*informers.Object)
		return a.GetNamespace() < b.GetNamespace() || (a.GetNamespace() == b.GetNamespace() && a.GetName() < b.GetName())
	})
	var out []map[string]any
	for _, obj := range objs {
		o := obj.(*informers.Object)
		if namespaced && namespace != "" && o.GetNamespace() != namespace {
			continue
		}
		u, err := o.Decode()
		if err != nil {
			return nil, err
		}
		if selector.Matches(labels.Set(u.GetLabels())) {
			out = append(out, u.Object)
		}
	}
	return out, nil
}
