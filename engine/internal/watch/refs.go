package watch

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// This file gives a rule's refs their watches and serves the rule's lookups from them.
// A ref reads every object of its kind in the namespaces the rule reads. When the rule
// also makes objects of that kind, it reads them from caches that split the objects by
// kubecel's managed-by label: kubecel's own from the kind's child informer
// (label-selected, cluster-wide, which the rule holds anyway) and, under sharding, from
// the informer of the buckets the replica does not serve (the child informer holds only
// those it serves); everything else from a ref informer per namespace (managed-by!=
// kubecel). So an object is cached once, whether it is a child, a ref or both.
// Otherwise one ref informer per namespace holds them all: a cluster-wide watch would
// need permissions that the rule does not (a ref confined to namespaces is granted
// there only, see `kubecel rbac`). Ref informers are shared by key with every rule.

// notOurs selects the objects that child informers leave out.
var notOurs = contract.LabelManagedBy + "!=" + contract.ManagedByValue

// refKind is one ref of a running rule: its kind as discovery says, its ref watches by
// namespace ("" for every namespace), and, when the rule makes objects of the kind, the
// informers of kubecel's own objects of the kind (ours; the ref watches then hold the
// others).
type refKind struct {
	Kind
	ref     *rules.Ref
	watches map[string]*informers.Watch
	regs    map[string]*informers.Registration
	ours    []hooked
}

// hooked is an informer acquired for a rule, with the rule's handler on it (nil reg:
// none).
type hooked struct {
	watch *informers.Watch
	reg   *informers.Registration
}

// resolveRefs finds the kind of every ref of the rule, and refuses a namespaced parent's
// ref of a cluster-scoped kind that the rule could not check at load.
func (w *Watcher) resolveRefs(st *Rule) error {
	for _, ref := range st.Rule.Refs {
		info, err := w.Kind(ref.GVK)
		if err != nil {
			return fmt.Errorf("ref %q kind %s: %w", ref.ID, ref.GVK, err)
		}
		if st.ParentKind.Namespaced && !info.Namespaced && !ref.CrossNamespace && ref.GVK.GroupKind() != (schema.GroupKind{Kind: "Namespace"}) {
			return fmt.Errorf("ref %q: %s is cluster-scoped, and the parent is namespaced: reading it needs crossNamespace: true on the ref", ref.ID, ref.GVK.Kind)
		}
		st.refs = append(st.refs, &refKind{Kind: info, ref: ref, watches: map[string]*informers.Watch{},
			regs: map[string]*informers.Registration{}})
	}
	return nil
}

// watchRefs acquires the informers of the rule's refs and routes their events to the
// parents that read the objects.
func (w *Watcher) watchRefs(ctx context.Context, st *Rule) error {
	for _, rk := range st.refs {
		selector := ""
		if st.Children[rk.GVK.GroupKind()] != nil {
			ours, err := w.watchOurs(ctx, st, rk)
			if err != nil {
				return err
			}
			rk.ours = ours
			selector = notOurs
		}
		namespaces := []string{""}
		if rk.Namespaced {
			namespaces = st.Rule.RefNamespaces(rk.ref)
		}
		for _, ns := range namespaces {
			if _, ok := rk.watches[ns]; ok {
				continue
			}
			rw, err := w.set.Acquire(ctx, informers.Key{GVR: rk.GVR, Namespace: ns, Selector: selector}, nil)
			if err != nil {
				return err
			}
			rk.watches[ns] = rw
			reg, err := rw.Informer.AddEventHandler(w.refHandler(st, rk.GVK.GroupKind()))
			if err != nil {
				return err
			}
			rk.regs[ns] = reg
		}
	}
	return nil
}

// releaseRefs removes the rule's ref handlers and releases its ref informers.
func (w *Watcher) releaseRefs(st *Rule) {
	for _, rk := range st.refs {
		for ns, rw := range rk.watches {
			if reg, ok := rk.regs[ns]; ok {
				_ = rw.Informer.RemoveEventHandler(reg)
			}
			w.set.Release(rw)
		}
		w.unhook(rk.ours)
	}
}

// watchOurs acquires the informers of kubecel's objects of a ref's kind, every bucket
// between them (ourWatchKeys), with the rule's ref handler on each.
func (w *Watcher) watchOurs(ctx context.Context, st *Rule, rk *refKind) ([]hooked, error) {
	var out []hooked
	for _, key := range w.ourWatchKeys(rk.GVR) {
		ow, err := w.set.Acquire(ctx, key, w.setupChildInformer)
		if err != nil {
			w.unhook(out)
			return nil, err
		}
		reg, err := ow.Informer.AddEventHandler(w.refHandler(st, rk.GVK.GroupKind()))
		if err != nil {
			w.set.Release(ow)
			w.unhook(out)
			return nil, err
		}
		out = append(out, hooked{watch: ow, reg: reg})
	}
	return out, nil
}

// unhook removes the handlers of hs (where they have one) and releases their informers.
func (w *Watcher) unhook(hs []hooked) {
	for _, h := range hs {
		if h.reg != nil {
			_ = h.watch.Informer.RemoveEventHandler(h.reg)
		}
		w.set.Release(h.watch)
	}
}

// refsSynced reports whether every ref informer of the rule has synced.
func (st *Rule) refsSynced() bool {
	for _, rk := range st.refs {
		if !hookedSynced(rk.ours) {
			return false
		}
		for _, w := range rk.watches {
			if !w.Synced() {
				return false
			}
		}
	}
	return true
}

func hookedSynced(hs []hooked) bool {
	for _, h := range hs {
		if !h.watch.Synced() {
			return false
		}
	}
	return true
}

// refHandler enqueues the parents of the rule that read an object of kind gk that was
// added, changed or deleted.
func (w *Watcher) refHandler(st *Rule, gk schema.GroupKind) cache.ResourceEventHandler {
	changed := func(oldObj, newObj any) {
		st.reads.event()
		for _, key := range st.reads.readers(gk, oldObj, newObj) {
			w.events.Enqueue(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { changed(nil, obj) },
		UpdateFunc: changed,
		DeleteFunc: func(obj any) { changed(obj, nil) },
	}
}

// cachedRefs is a rules.RefSource over a rule's ref informers.
type cachedRefs struct{ st *Rule }

// Refs is the rules.RefSource the rule's evaluation reads its refs from.
func (st *Rule) Refs() rules.RefSource { return cachedRefs{st} }

// RefEvents counts the events of the rule's ref informers. A reconcile that sees it move
// while it evaluated looks again: the event may have come before the rule's index knew
// that the parent reads the object.
func (st *Rule) RefEvents() uint64 { return st.reads.events.Load() }

// SetReads records what a parent's evaluation read through refs (rules.Result.Refs),
// replacing what it read before, so that their events queue the parent.
func (st *Rule) SetReads(key Key, lookups []rules.Lookup) {
	if len(st.refs) > 0 {
		st.reads.set(key, lookups)
	}
}

// DropReads forgets what a parent that is gone read.
func (st *Rule) DropReads(key Key) { st.reads.drop(key) }

// stores returns the caches that hold the objects of gvk in namespace: the ref watch's,
// then those of kubecel's own objects when the rule makes the kind.
func (s cachedRefs) stores(gvk schema.GroupVersionKind, namespace string) (stores []cache.Store, namespaced bool, err error) {
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
		if !w.Synced() || !hookedSynced(rk.ours) {
			return nil, false, fmt.Errorf("the cache of %s has not synced yet", rk.GVR.Resource)
		}
		stores = append(stores, w.Informer.GetStore())
		for _, h := range rk.ours {
			stores = append(stores, h.watch.Informer.GetStore())
		}
		return stores, rk.Namespaced, nil
	}
	return nil, false, fmt.Errorf("%s in namespace %q is not watched for this rule's refs", gvk.Kind, namespace)
}

// Get implements rules.RefSource.
func (s cachedRefs) Get(_ context.Context, gvk schema.GroupVersionKind, namespace, name string) (map[string]any, bool, error) {
	stores, namespaced, err := s.stores(gvk, namespace)
	if err != nil {
		return nil, false, err
	}
	key := name
	if namespaced && namespace != "" {
		key = namespace + "/" + name
	}
	for _, store := range stores {
		obj, ok, err := store.GetByKey(key)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			continue
		}
		u, err := obj.(*informers.Object).Decode()
		if err != nil {
			return nil, false, err
		}
		return u.Object, true, nil
	}
	return nil, false, nil
}

// List implements rules.RefSource.
func (s cachedRefs) List(_ context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]map[string]any, error) {
	stores, namespaced, err := s.stores(gvk, namespace)
	if err != nil {
		return nil, err
	}
	var objs []*informers.Object
	for _, store := range stores {
		for _, obj := range store.List() {
			if o := obj.(*informers.Object); !namespaced || namespace == "" || o.GetNamespace() == namespace {
				objs = append(objs, o)
			}
		}
	}
	// A stable order, so that CEL over the list gives the same children every time.
	sort.Slice(objs, func(i, j int) bool {
		a, b := objs[i], objs[j]
		return a.GetNamespace() < b.GetNamespace() || (a.GetNamespace() == b.GetNamespace() && a.GetName() < b.GetName())
	})
	var out []map[string]any
	for _, o := range objs {
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
