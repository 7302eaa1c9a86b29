package watch

import (
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/rules"
)

// refIndex maps the objects a rule's parents read through refs back to those parents,
// so that an event on a referenced object queues exactly the parents that read it. Each
// evaluation replaces its parent's entries with what it looked up (rules.Result.Refs).
type refIndex struct {
	mu sync.Mutex
	// byName holds the parents that read one object by name.
	byName map[refTarget]parentSet
	// bySelector holds the parents that list objects of a kind in a namespace ("" for
	// every namespace), with the selector each used.
	bySelector map[refTarget]map[Key]labels.Selector
	// reads is what each parent read last, to remove it when replaced.
	reads map[Key][]refTarget
	// events counts the events of the rule's ref informers; a reconcile that sees it move
	// while it evaluated looks again, since the event may have come before the index
	// knew that the parent reads the object.
	events atomic.Uint64
}

// refTarget is an object read by name, or (with no name) a kind and namespace listed
// with a selector.
type refTarget struct {
	gk              schema.GroupKind
	namespace, name string
}

func (x *refIndex) event() { x.events.Add(1) }

// set replaces what parent read with the lookups of its last evaluation.
func (x *refIndex) set(parent Key, lookups []rules.Lookup) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropLocked(parent)
	if len(lookups) == 0 {
		return
	}
	if x.byName == nil {
		x.byName = map[refTarget]parentSet{}
		x.bySelector = map[refTarget]map[Key]labels.Selector{}
		x.reads = map[Key][]refTarget{}
	}
	targets := make([]refTarget, 0, len(lookups))
	for _, l := range lookups {
		t := refTarget{gk: l.GVK.GroupKind(), namespace: l.Namespace, name: l.Name}
		targets = append(targets, t)
		if l.Selector == nil {
			set := x.byName[t]
			set.add(parent)
			x.byName[t] = set
			continue
		}
		if x.bySelector[t] == nil {
			x.bySelector[t] = map[Key]labels.Selector{}
		}
		x.bySelector[t][parent] = l.Selector
	}
	x.reads[parent] = targets
}

// drop forgets what parent read.
func (x *refIndex) drop(parent Key) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropLocked(parent)
}

func (x *refIndex) dropLocked(parent Key) {
	for _, t := range x.reads[parent] {
		if t.name != "" {
			set := x.byName[t]
			if set.remove(parent); set.len() == 0 {
				delete(x.byName, t)
			} else {
				x.byName[t] = set
			}
			continue
		}
		delete(x.bySelector[t], parent)
		if len(x.bySelector[t]) == 0 {
			delete(x.bySelector, t)
		}
	}
	delete(x.reads, parent)
}

// readers returns the parents that read the object of kind gk an event is about: before
// the event (oldObj, nil for an add) or after it (newObj, nil for a delete).
func (x *refIndex) readers(gk schema.GroupKind, oldObj, newObj any) []Key {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []Key
	seen := map[Key]bool{}
	add := func(k Key) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for _, obj := range []any{oldObj, newObj} {
		o, ok := asObject(obj)
		if !ok {
			continue
		}
		x.byName[refTarget{gk: gk, namespace: o.GetNamespace(), name: o.GetName()}].each(add)
		lists := []map[Key]labels.Selector{x.bySelector[refTarget{gk: gk, namespace: o.GetNamespace()}]}
		if o.GetNamespace() != "" {
			lists = append(lists, x.bySelector[refTarget{gk: gk}])
		}
		if len(lists[0]) == 0 && (len(lists) == 1 || len(lists[1]) == 0) {
			continue
		}
		set := objectLabels(o)
		for _, l := range lists {
			for k, sel := range l {
				if sel.Matches(set) {
					add(k)
				}
			}
		}
	}
	return out
}

// objectLabels decodes a cached object's labels (the cache keeps only kubecel's own as
// fields); none when it cannot be decoded.
func objectLabels(o *informers.Object) labels.Set {
	u, err := o.Decode()
	if err != nil {
		return nil
	}
	return u.GetLabels()
}

// parentSet is a set of parents: a short list while small, since most objects read by
// name are read by one parent each (for 10,000 objects read by one parent each, byName
// took 659 bytes per object with a map per object, 105 with a list), and a map once
// large, for an object that thousands of parents read.
type parentSet struct {
	few  []Key
	many map[Key]struct{}
}

// fewParents is the largest set kept as a list.
const fewParents = 8

func (s *parentSet) add(k Key) {
	switch {
	case s.many != nil:
		s.many[k] = struct{}{}
	case slices.Contains(s.few, k):
	case len(s.few) < fewParents:
		s.few = append(s.few, k)
	default:
		s.many = make(map[Key]struct{}, len(s.few)+1)
		for _, f := range s.few {
			s.many[f] = struct{}{}
		}
		s.many[k] = struct{}{}
		s.few = nil
	}
}

func (s *parentSet) remove(k Key) {
	if s.many != nil {
		delete(s.many, k)
		return
	}
	if i := slices.Index(s.few, k); i >= 0 {
		s.few = slices.Delete(s.few, i, i+1)
	}
}

func (s parentSet) len() int { return len(s.few) + len(s.many) }

func (s parentSet) each(fn func(Key)) {
	for _, k := range s.few {
		fn(k)
	}
	for k := range s.many {
		fn(k)
	}
}
