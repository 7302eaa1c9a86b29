package watch

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// Watcher starts and stops the watches of rules: it resolves a rule's kinds through
// discovery, acquires the informers (shared between rules) of its parents, children and refs, and
// routes their events to Events. It keeps the rules it started, so that a change of the
// buckets (Rebucket) reaches every one of them, whoever started them and when. Its
// lock covers only the informers it acquires and releases, never a request to the API
// server (Resolve and StillServed ask discovery without it).
type Watcher struct {
	set     *informers.Set
	kinds   *kinds
	written *informers.Written
	events  Events

	mu sync.Mutex
	// served lists the buckets the replica serves under sharding, as label values
	// ("3,17", or noBuckets), whose children the child informers hold and whose parents
	// the parent informers hold whole; "" is every bucket.
	served string
	// started are the rules started and not stopped.
	started map[*Rule]struct{}
}

// NewWatcher returns a Watcher over the informers of set, resolving kinds with mapper.
// written is the controller's memory of its writes, whose echoes the handlers drop.
// sharded starts it with no bucket: child informers hold nothing and parent informers
// only stubs until Rebucket.
func NewWatcher(set *informers.Set, mapper meta.ResettableRESTMapper, written *informers.Written, events Events, sharded bool) *Watcher {
	w := &Watcher{set: set, kinds: newKinds(mapper), written: written, events: events, started: map[*Rule]struct{}{}}
	if sharded {
		w.served = servedValues(nil)
	}
	return w
}

// Reset forgets what discovery said, so that kinds are looked up again.
func (w *Watcher) Reset() { w.kinds.reset() }

// KindFor is the kind of a resource, as discovery serves it (remembered until Reset).
func (w *Watcher) KindFor(gvr schema.GroupVersionResource) (Kind, error) {
	return w.kinds.forResource(gvr)
}

// Kind is what discovery says about gvk (remembered until Reset).
func (w *Watcher) Kind(gvk schema.GroupVersionKind) (Kind, error) { return w.kinds.forKind(gvk) }

// Resolve finds the kinds of a rule's parent, children and refs, without watching
// anything yet. old, when set, is the version being replaced: its child kinds stay.
func (w *Watcher) Resolve(r *rules.Rule, old *Rule, also ...*rules.Rule) (*Rule, error) {
	parent, err := w.KindFor(r.Parent.GVR)
	if err != nil {
		return nil, fmt.Errorf("parent resource %s in %s: %w", r.Parent.GVR.Resource, r.Parent.GVR.GroupVersion(), err)
	}
	st := &Rule{Rule: r, ParentKind: parent, parents: map[string]*parentWatch{}, Children: map[schema.GroupKind]*ChildKind{}}
	kinds := map[schema.GroupKind]schema.GroupVersionKind{}
	if old != nil {
		for gk, ck := range old.Children {
			kinds[gk] = ck.GVK
		}
	}
	for _, other := range also {
		if other == nil {
			continue
		}
		for _, ch := range other.Children {
			kinds[ch.GVK.GroupKind()] = ch.GVK
		}
	}
	for _, ch := range r.Children {
		kinds[ch.GVK.GroupKind()] = ch.GVK
	}
	for gk, gvk := range kinds {
		info, err := w.Kind(gvk)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", childrenOfKind(r, gvk), err)
		}
		st.Children[gk] = &ChildKind{Kind: info}
	}
	if err := w.resolveRefs(st); err != nil {
		return nil, err
	}
	return st, nil
}

// Start acquires the watches of a resolved rule: its child kinds, its refs and its
// parents, whose events it routes to its Events. On error, whatever it acquired is
// released.
func (w *Watcher) Start(ctx context.Context, st *Rule) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started[st] = struct{}{}
	for _, ck := range st.Children {
		cw, err := w.set.Acquire(ctx, w.childWatchKey(ck.GVR), w.setupChildInformer)
		if err != nil {
			w.stopLocked(st)
			return err
		}
		ck.watch.Store(cw)
	}
	if err := w.watchRefs(ctx, st); err != nil {
		w.stopLocked(st)
		return err
	}
	r := st.Rule
	namespaces := r.Parent.Namespaces
	if len(namespaces) == 0 || !st.ParentKind.Namespaced {
		namespaces = []string{""}
	}
	for _, ns := range namespaces {
		h, err := w.watchParents(ctx, st, ns)
		if err != nil {
			w.stopLocked(st)
			return err
		}
		pw := &parentWatch{}
		pw.cur.Store(&h)
		st.parents[ns] = pw
	}
	klog.FromContext(ctx).Info("Started rule", "rule", r.Name, "parent", st.ParentKind.GVR.String(), "childKinds", len(st.Children))
	return nil
}

// Stop releases the rule's handlers and watches and marks it stopped. Its maps stay as
// they are: a reconcile that already holds the rule may still read them.
func (w *Watcher) Stop(st *Rule) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopLocked(st)
}

func (w *Watcher) stopLocked(st *Rule) {
	delete(w.started, st)
	for _, pw := range st.parents {
		w.unhook([]hooked{*pw.cur.Load()})
	}
	for _, ck := range st.Children {
		if cw := ck.watch.Load(); cw != nil {
			w.set.Release(cw)
		}
	}
	w.releaseRefs(st)
	st.stopped.Store(true)
}

// StillServed reports an error when discovery no longer serves a kind the rule uses.
func (w *Watcher) StillServed(st *Rule) error {
	if _, err := w.KindFor(st.ParentKind.GVR); err != nil {
		return err
	}
	for _, ck := range st.Children {
		if _, err := w.Kind(ck.GVK); err != nil {
			return err
		}
	}
	return nil
}

// AddChildKind makes a running rule also watch its objects of a kind that no child of
// the rule produces (any more), so that they can be pruned.
func (w *Watcher) AddChildKind(ctx context.Context, st *Rule, gvk schema.GroupVersionKind) error {
	if st.Children[gvk.GroupKind()] != nil {
		return nil
	}
	info, err := w.Kind(gvk)
	if err != nil {
		return fmt.Errorf("rule %q: kind %s of objects to prune: %w", st.Rule.Name, gvk, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	cw, err := w.set.Acquire(ctx, w.childWatchKey(info.GVR), w.setupChildInformer)
	if err != nil {
		return err
	}
	ck := &ChildKind{Kind: info}
	ck.watch.Store(cw)
	st.Children[gvk.GroupKind()] = ck
	return nil
}

// parentWatchKey is the key of the informer of a rule's parents in namespace ns ("" for
// all): under sharding it holds whole only the parents of the buckets the replica
// serves, unless the rule keeps every parent whole (Rule.WholeParents).
func (w *Watcher) parentWatchKey(st *Rule, ns string) informers.Key {
	key := informers.Key{GVR: st.ParentKind.GVR, Namespace: ns, Selector: st.Rule.Parent.Selector.String(), Schema: st.ParentSchema}
	if !st.WholeParents {
		key.Whole = w.served
	}
	return key
}

// watchParents acquires the informer of a rule's parents in namespace ns, with the
// rule's handler on it unless the rule runs beside its running version (Rule.Beside).
func (w *Watcher) watchParents(ctx context.Context, st *Rule, ns string) (hooked, error) {
	pw, err := w.set.Acquire(ctx, w.parentWatchKey(st, ns), nil)
	if err != nil {
		return hooked{}, err
	}
	if st.Beside {
		return hooked{watch: pw}, nil
	}
	// A delete event of an informer that filters by labels may be an object
	// relabelled out of its selector; labels.Everything filters nothing.
	reg, err := pw.Informer.AddEventHandler(w.parentHandler(st.Rule.Name, pw.Key().Selector != ""))
	if err != nil {
		w.set.Release(pw)
		return hooked{}, err
	}
	return hooked{watch: pw, reg: reg}, nil
}

// managedWatchKey is the key of the informer of kubecel's objects of one resource, in
// every namespace: the children's, unless sharding restricts them to some buckets
// (childWatchKey).
func managedWatchKey(gvr schema.GroupVersionResource) informers.Key {
	return informers.Key{GVR: gvr, Selector: contract.LabelManagedBy + "=" + contract.ManagedByValue}
}

// childWatchKey is the key of the informer of kubecel's objects of one resource, in
// every namespace, restricted to the buckets the replica serves.
func (w *Watcher) childWatchKey(gvr schema.GroupVersionResource) informers.Key {
	key := managedWatchKey(gvr)
	if w.served != "" {
		key.Selector += "," + contract.LabelBucket + " in (" + w.served + ")"
	}
	return key
}

// ourWatchKeys are the keys of the informers that hold kubecel's objects of one
// resource in every bucket, for a ref of a kind the rule also makes: the child
// informer's, and under sharding the informer of the buckets it leaves out (an object
// without a bucket label among them).
func (w *Watcher) ourWatchKeys(gvr schema.GroupVersionResource) []informers.Key {
	keys := []informers.Key{w.childWatchKey(gvr)}
	if w.served != "" {
		others := managedWatchKey(gvr)
		others.Selector += "," + contract.LabelBucket + " notin (" + w.served + ")"
		keys = append(keys, others)
	}
	return keys
}

// childrenOfKind names, for an error, the children of a rule that have a kind: child
// "a", children "a", "b", or the kind when none has it (a kind an earlier version of
// the rule made).
func childrenOfKind(r *rules.Rule, gvk schema.GroupVersionKind) string {
	var ids []string
	for _, ch := range r.Children {
		if ch.GVK == gvk {
			ids = append(ids, strconv.Quote(ch.ID))
		}
	}
	switch len(ids) {
	case 0:
		return fmt.Sprintf("child kind %s %s", gvk.GroupVersion(), gvk.Kind)
	case 1:
		return "child " + ids[0]
	}
	return "children " + strings.Join(ids, ", ")
}
