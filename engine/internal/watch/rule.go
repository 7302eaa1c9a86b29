package watch

import (
	"cmp"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/rules"
)

// Kind is what discovery says about one kind.
type Kind struct {
	GVK        schema.GroupVersionKind
	GVR        schema.GroupVersionResource
	Namespaced bool
}

// ChildKind is one kind a rule's children have, and the informer of kubecel's objects
// of that kind. A change of the buckets (Rebucketing.Finish) replaces the informer: a
// reconcile reads it through Rule's methods under the loop's pause, so that it reads one
// set of informers throughout; any other reader sees the one before or the one after.
type ChildKind struct {
	Kind
	watch atomic.Pointer[informers.Watch]
}

// Selector is the label selector of the kind's informer.
func (ck *ChildKind) Selector() string { return ck.watch.Load().Key().Selector }

// parentWatch is the informer of a rule's parents in one namespace, with the rule's
// handler on it (none on a Beside version). A change of the buckets
// (Rebucketing.Finish) replaces it, as it does a ChildKind's.
type parentWatch struct {
	cur atomic.Pointer[hooked]
}

// watch is the informer.
func (pw *parentWatch) watch() *informers.Watch { return pw.cur.Load().watch }

// Rule is one running rule's view of the cluster: its parents, the children it made
// and the objects its refs read, all from the caches. Its child kinds include kinds an
// earlier version of the rule produced, so that their objects can still be pruned.
// Nothing in it changes after Watcher.Start returns but the informers behind a child
// kind and the parents (Watcher.Rebucket) and Stopped.
type Rule struct {
	Rule       *rules.Rule
	ParentKind Kind
	// Children are the rule's child kinds.
	Children map[schema.GroupKind]*ChildKind
	// Beside, set before Start, marks a version that runs beside the rule's running
	// version (the revision a rollout rolls from): the running version's handlers queue
	// the parents and tell of deleted ones, so this one registers no parent handler
	// (each parent event would queue the parent twice, the echo of our own status write
	// among them). Its refs' handlers it keeps: its refs may be its own.
	Beside bool
	// ParentSchema, set before Start, names the schema of the parent resource when the
	// rule defines it (its CRD's generation): the parents' cache is listed under one
	// schema, and a version of the rule started after a change of the CRD lists the
	// parents again, as the API server now serves them (new defaults, pruned fields).
	// The watch events that follow a CRD change do not send the objects again.
	ParentSchema string
	// WholeParents, set before Start, keeps every parent whole in the rule's caches,
	// whatever buckets the replica serves: set for a rule whose rollout reads its parents
	// (their revisions and conditions, on every replica). Otherwise, under sharding, the
	// parents of the buckets the replica does not serve are cached as stubs
	// (informers.ErrStub).
	WholeParents bool

	parents map[string]*parentWatch // by namespace ("" = all)
	refs    []*refKind
	reads   refIndex
	stopped atomic.Bool
	// inflight is held for reading by every reconcile under this rule version (Enter)
	// and for writing by Drain.
	inflight sync.RWMutex
}

// Name is the rule's name.
func (st *Rule) Name() string { return st.Rule.Name }

// Stopped reports whether the rule's watches were released: a reconcile that still
// holds the rule then does nothing.
func (st *Rule) Stopped() bool { return st.stopped.Load() }

// Enter begins a reconcile under the rule, and reports false, entering nothing, when
// the rule was stopped. Leave ends a reconcile that entered.
func (st *Rule) Enter() bool {
	st.inflight.RLock()
	if st.Stopped() {
		st.inflight.RUnlock()
		return false
	}
	return true
}

// Leave ends a reconcile that Enter began.
func (st *Rule) Leave() { st.inflight.RUnlock() }

// Drain waits for the reconciles that entered the rule before it was stopped: after
// Watcher.Stop and Drain, no reconcile writes anything for this rule version.
func (st *Rule) Drain() {
	st.inflight.Lock()
	defer st.inflight.Unlock()
}

// Synced reports whether every watch of the rule has synced.
func (st *Rule) Synced() bool {
	for _, pw := range st.parents {
		if !pw.watch().Synced() {
			return false
		}
	}
	for _, ck := range st.Children {
		if w := ck.watch.Load(); w == nil || !w.Synced() {
			return false
		}
	}
	return st.refsSynced()
}

// CachedParent returns a parent from the rule's cache as it holds it: encoded, whole
// or a stub.
func (st *Rule) CachedParent(key Key) (*informers.Object, bool) {
	pw := st.parents[key.Namespace]
	if pw == nil {
		pw = st.parents[""]
	}
	if pw == nil {
		return nil, false
	}
	obj, ok, err := pw.watch().Informer.GetStore().GetByKey(storeKey(key.Namespace, key.Name))
	if err != nil || !ok {
		return nil, false
	}
	return obj.(*informers.Object), true
}

// ParentVersion is the resourceVersion of a parent in the rule's cache, whole or a
// stub; false when the cache does not hold it.
func (st *Rule) ParentVersion(key Key) (string, bool) {
	obj, ok := st.CachedParent(key)
	if !ok {
		return "", false
	}
	return obj.GetResourceVersion(), true
}

// Get reads a parent from the rule's cache and decodes it: the result is the
// caller's to change. A parent cached as a stub (under sharding, of a bucket the
// replica does not serve) is an error that wraps informers.ErrStub, never a parent
// that is not there.
func (st *Rule) Get(key Key) (*unstructured.Unstructured, bool, error) {
	obj, ok := st.CachedParent(key)
	if !ok {
		return nil, false, nil
	}
	u, err := obj.Decode()
	return u, err == nil, err
}

// Parents returns the parents the rule's caches hold whole (in one namespace, or all
// when it is ""), decoded, sorted by namespace and name: under sharding, those of the
// buckets the replica served when its caches last changed, stubs left out.
func (st *Rule) Parents(namespace string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, pw := range st.parents {
		for _, o := range pw.watch().Informer.GetStore().List() {
			c := o.(*informers.Object)
			if c.Stub() || namespace != "" && c.GetNamespace() != namespace {
				continue
			}
			u, err := c.Decode()
			if err != nil {
				return nil, err
			}
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	return out, nil
}

// ParentKeys are the keys of every parent the rule's caches hold, whole or a stub.
func (st *Rule) ParentKeys() []Key {
	var keys []Key
	for _, pw := range st.parents {
		for _, o := range pw.watch().Informer.GetStore().List() {
			keys = append(keys, KeyFor(st.Rule.Name, o.(*informers.Object)))
		}
	}
	return keys
}

// CountParents counts the parents the rule's caches hold whole and as stubs.
func (st *Rule) CountParents() (whole, stubs int) {
	for _, pw := range st.parents {
		for _, o := range pw.watch().Informer.GetStore().List() {
			if o.(*informers.Object).Stub() {
				stubs++
			} else {
				whole++
			}
		}
	}
	return whole, stubs
}

// ChildParentKeys are the keys of the parents that the rule's proven children in its
// caches name, in the rule's parent caches or not: a parent relabelled out of the
// rule's selector while no controller ran is known only by its children.
func (st *Rule) ChildParentKeys() []Key {
	seen := map[Key]bool{}
	var keys []Key
	for _, ck := range st.Children {
		cw := ck.watch.Load()
		if cw == nil {
			continue
		}
		for _, o := range cw.Informer.GetStore().List() {
			u := o.(*informers.Object)
			if u.Rule() != st.Rule.Name || u.Origin() != st.Rule.Origin {
				continue
			}
			if key, ok := parentOf(u); ok && !seen[key] {
				seen[key] = true
				keys = append(keys, key)
			}
		}
	}
	return keys
}

// OwnedChildren returns the cached children this rule made for the parent with this
// UID, in a stable order: objects whose proof (the caches keep kubecel's labels of
// proven objects alone) names this rule, its origin and the parent's UID.
func (st *Rule) OwnedChildren(parentUID string) []*informers.Object {
	var out []*informers.Object
	for _, ck := range st.Children {
		cw := ck.watch.Load()
		store := cw.Informer.GetStore()
		for _, key := range cw.Children.Keys(parentUID) {
			o, ok, err := store.GetByKey(key)
			if err != nil || !ok {
				continue // deleted since: its delete event updates the index next
			}
			u := o.(*informers.Object)
			if st.Owns(u, parentUID) {
				out = append(out, u)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return KeyOf(out[i]).String() < KeyOf(out[j]).String() })
	return out
}

// Owns reports whether a cached object is the rule's proven child of the parent with
// this UID.
func (st *Rule) Owns(o *informers.Object, parentUID string) bool {
	return o.Rule() == st.Rule.Name && o.Origin() == st.Rule.Origin && o.ParentUID() == parentUID
}

// Cached returns the object the child informer of its kind holds under k, if any:
// kubecel's object of that name, proven or not.
func (st *Rule) Cached(k ObjectKey) (*informers.Object, bool) {
	ck := st.Children[k.GK]
	if ck == nil {
		return nil, false
	}
	cw := ck.watch.Load()
	if cw == nil {
		return nil, false
	}
	o, ok, err := cw.Informer.GetStore().GetByKey(storeKey(k.Namespace, k.Name))
	if err != nil || !ok {
		return nil, false
	}
	return o.(*informers.Object), true
}

// ParentRef describes a parent of the rule for the child contract.
func (st *Rule) ParentRef(parent *unstructured.Unstructured) rules.ParentRef {
	return rules.ParentRefOf(parent.Object, st.ParentKind.GVR.GroupResource(), st.ParentKind.Namespaced)
}

// Selects reports whether the rule's namespaces and selector take in parent.
func (st *Rule) Selects(parent *unstructured.Unstructured) bool {
	return st.Rule.Selects(parent.GetNamespace(), st.ParentKind.Namespaced, parent.GetLabels())
}

// Child is the rule's child of this id (a bare one for an id the rule no longer has).
func (st *Rule) Child(id string) *rules.Child {
	for _, ch := range st.Rule.Children {
		if ch.ID == id {
			return ch
		}
	}
	return &rules.Child{ID: id}
}

// Access lists what the rule needs from the API server for the kinds discovery resolved
// (rules.Rule.Access and RefAccess, which `kubecel rbac` prints too): its child kinds
// include those an earlier version of the rule made, which it may still prune.
func (st *Rule) Access() []rules.Access {
	children := make([]schema.GroupVersionResource, 0, len(st.Children))
	for _, ck := range st.Children {
		children = append(children, ck.GVR)
	}
	sort.Slice(children, func(i, j int) bool { return children[i].String() < children[j].String() })
	needed := st.Rule.Access(st.ParentKind.Namespaced, children)
	for _, rk := range st.refs {
		needed = append(needed, st.Rule.RefAccess(rk.ref, rk.GVR, rk.Namespaced)...)
	}
	return needed
}
