package engine

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/rules"
)

// kindInfo is what discovery says about one kind.
type kindInfo struct {
	GVK        schema.GroupVersionKind
	GVR        schema.GroupVersionResource
	Namespaced bool
}

// ruleState is one running rule: its rule, its parent watches and the child kinds it
// produces (including kinds an earlier version of the rule produced, so that their
// objects can still be pruned).
type ruleState struct {
	rule     *rules.Rule
	parent   kindInfo
	parents  map[string]*informers.Watch // by namespace ("" = all)
	regs     map[string]cache.ResourceEventHandlerRegistration
	children map[schema.GroupKind]*childKind
	// refs are the rule's refs and their watches (refs.go); refIndex tells which parents
	// read which referenced objects (refindex.go).
	refs     []*refKind
	refIndex refIndex
	// stopped is set once the rule's watches are released; a reconcile still holding the
	// state then does nothing.
	stopped atomic.Bool
}

type childKind struct {
	kindInfo
	watch *informers.Watch
}

// SetRules replaces the running rule set. Only rules whose fingerprint changed are
// restarted; rules whose kinds are not served yet wait and start by themselves.
func (c *Controller) SetRules(ctx context.Context, rs *rules.RuleSet) {
	logger := klog.FromContext(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	wanted := map[string]*rules.Rule{}
	for _, r := range rs.Rules {
		wanted[r.Name] = r
	}
	for name, st := range c.rules {
		if r, ok := wanted[name]; !ok || r.Fingerprint != st.rule.Fingerprint {
			if ok {
				// Keep the old watches alive until the new version holds them.
				continue
			}
			logger.Info("Stopping rule", "rule", name)
			c.releaseParents(ctx, st)
			c.stopRule(st)
			delete(c.rules, name)
		}
	}
	c.pending = map[string]*pendingRule{}
	for name, r := range wanted {
		old := c.rules[name]
		if old != nil && old.rule.Fingerprint == r.Fingerprint {
			continue
		}
		if err := c.startRuleLocked(ctx, r, old); err != nil {
			c.setPending(ctx, r, err)
		} else if old != nil {
			// Parents the new version no longer selects are released by it.
			old.enqueueAll(c.queue)
		}
		if old != nil {
			c.stopRule(old)
			if c.rules[name] == old {
				delete(c.rules, name)
			}
		}
	}
	c.loaded = true
	c.updateRuleGauges()
}

// startRuleLocked resolves the rule's kinds, starts its watches and queues its parents.
// old, when set, is the version being replaced: its child kinds stay watched.
func (c *Controller) startRuleLocked(ctx context.Context, r *rules.Rule, old *ruleState) error {
	parent, err := c.kindForResource(r.Parent.GVR)
	if err != nil {
		return fmt.Errorf("parent resource %s in %s: %w", r.Parent.GVR.Resource, r.Parent.GVR.GroupVersion(), err)
	}
	st := &ruleState{rule: r, parent: parent, parents: map[string]*informers.Watch{},
		regs: map[string]cache.ResourceEventHandlerRegistration{}, children: map[schema.GroupKind]*childKind{}}
	kinds := map[schema.GroupKind]schema.GroupVersionKind{}
	if old != nil {
		for gk, ck := range old.children {
			kinds[gk] = ck.GVK
		}
	}
	for _, ch := range r.Children {
		kinds[ch.GVK.GroupKind()] = ch.GVK
	}
	for gk, gvk := range kinds {
		info, err := c.kindInfo(gvk)
		if err != nil {
			return fmt.Errorf("%s: %w", childrenOfKind(r, gvk), err)
		}
		st.children[gk] = &childKind{kindInfo: info}
	}
	if err := c.resolveRefs(st); err != nil {
		return err
	}
	if !c.opts.SkipAccessCheck {
		if err := c.checkAccess(ctx, st); err != nil {
			return err
		}
	}
	for _, ck := range st.children {
		w, err := c.watches.Acquire(ctx, c.childWatchKey(ck.GVR), c.setupChildInformer)
		if err != nil {
			c.stopRule(st)
			return err
		}
		ck.watch = w
	}
	if err := c.watchRefs(ctx, st); err != nil {
		c.stopRule(st)
		return err
	}
	namespaces := r.Parent.Namespaces
	if len(namespaces) == 0 || !parent.Namespaced {
		namespaces = []string{""}
	}
	for _, ns := range namespaces {
		w, err := c.watches.Acquire(ctx, informers.Key{GVR: parent.GVR, Namespace: ns, Selector: r.Parent.Selector.String()}, nil)
		if err != nil {
			c.stopRule(st)
			return err
		}
		st.parents[ns] = w
		reg, err := w.Informer.AddEventHandler(c.parentHandler(r.Name, r.Parent.Selector != nil))
		if err != nil {
			c.stopRule(st)
			return err
		}
		st.regs[ns] = reg
	}
	c.rules[r.Name] = st
	klog.FromContext(ctx).Info("Started rule", "rule", r.Name, "parent", parent.GVR.String(), "childKinds", len(st.children))
	return nil
}

// managedWatchKey is the key of the informer of kubecel's objects of one resource, in
// every namespace: the children's (unless sharding restricts them to some buckets:
// childWatchKey), which refs of the kind read too.
func managedWatchKey(gvr schema.GroupVersionResource) informers.Key {
	return informers.Key{GVR: gvr, Selector: rules.LabelManagedBy + "=" + rules.ManagedByValue}
}

// stopRule releases the rule's handlers and watches.
func (c *Controller) stopRule(st *ruleState) {
	for ns, w := range st.parents {
		if reg, ok := st.regs[ns]; ok {
			_ = w.Informer.RemoveEventHandler(reg)
		}
		c.watches.Release(w)
	}
	for _, ck := range st.children {
		if ck.watch != nil {
			c.watches.Release(ck.watch)
		}
	}
	c.releaseRefs(st)
	c.resume.dropRule(st.rule.Name)
	// The maps stay as they are: a reconcile that already holds st may still read them.
	st.stopped.Store(true)
}

func (c *Controller) stopAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, st := range c.rules {
		c.stopRule(st)
		delete(c.rules, name)
	}
}

func (c *Controller) kindForResource(gvr schema.GroupVersionResource) (kindInfo, error) {
	gvk, err := c.mapper.KindFor(gvr)
	if err != nil {
		return kindInfo{}, err
	}
	return c.kindInfo(gvk)
}

func (c *Controller) kindInfo(gvk schema.GroupVersionKind) (kindInfo, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return kindInfo{}, err
	}
	return kindInfo{GVK: gvk, GVR: m.Resource, Namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}, nil
}

func (c *Controller) rule(name string) *ruleState {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rules[name]
}

// synced reports whether every watch of the rule has synced.
func (st *ruleState) synced() bool {
	for _, w := range st.parents {
		if !w.Synced() {
			return false
		}
	}
	for _, ck := range st.children {
		if !ck.watch.Synced() {
			return false
		}
	}
	return st.refsSynced()
}

// cachedParent returns a parent from the rule's cache, still encoded.
func (st *ruleState) cachedParent(key queueKey) (*informers.Object, bool) {
	w := st.parents[key.Namespace]
	if w == nil {
		w = st.parents[""]
	}
	if w == nil {
		return nil, false
	}
	storeKey := key.Name
	if key.Namespace != "" {
		storeKey = key.Namespace + "/" + key.Name
	}
	obj, ok, err := w.Informer.GetStore().GetByKey(storeKey)
	if err != nil || !ok {
		return nil, false
	}
	return obj.(*informers.Object), true
}

// hasParent reports whether the rule's cache holds the parent.
func (st *ruleState) hasParent(key queueKey) bool {
	_, ok := st.cachedParent(key)
	return ok
}

// getParent reads a parent from the rule's cache and decodes it: the result is the
// caller's to change.
func (st *ruleState) getParent(key queueKey) (*unstructured.Unstructured, bool, error) {
	obj, ok := st.cachedParent(key)
	if !ok {
		return nil, false, nil
	}
	u, err := obj.Decode()
	return u, err == nil, err
}

// ownedChildren returns the cached children this rule made for this parent, in a stable
// order: objects whose proof (the caches keep kubecel's labels of proven objects
// alone) names this rule, its origin and the parent's UID.
func (st *ruleState) ownedChildren(parentUID string) []*informers.Object {
	var out []*informers.Object
	for _, ck := range st.children {
		store := ck.watch.Informer.GetStore()
		for _, key := range ck.watch.Children.Keys(parentUID) {
			o, ok, err := store.GetByKey(key)
			if err != nil || !ok {
				continue // deleted since: its delete event updates the index next
			}
			u := o.(*informers.Object)
			if u.Rule() == st.rule.Name && u.Origin() == st.rule.Origin && u.ParentUID() == parentUID {
				out = append(out, u)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return keyOf(out[i]).String() < keyOf(out[j]).String() })
	return out
}

func (st *ruleState) enqueueAll(q workqueue.TypedRateLimitingInterface[queueKey]) {
	for _, key := range st.parentKeys() {
		q.Add(key)
	}
}

// parentKeys are the queue keys of every parent the rule's caches hold.
func (st *ruleState) parentKeys() []queueKey {
	var keys []queueKey
	for _, w := range st.parents {
		for _, o := range w.Informer.GetStore().List() {
			u := o.(*informers.Object)
			keys = append(keys, queueKey{Rule: st.rule.Name, Namespace: u.GetNamespace(), Name: u.GetName()})
		}
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
