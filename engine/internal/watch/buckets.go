package watch

import (
	"context"
	"strings"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/rules/contract"
)

// With sharding, child informers hold only the children of the buckets the replica
// serves (selected by contract.LabelBucket). Parent informers hold every parent, and refs
// read every object they would without sharding (a ref may read any object): kubecel's
// own objects of the other buckets from an informer of those buckets (ourWatchKeys).

// noBuckets selects no child: what a replica watches before it serves a ring.
const noBuckets = "none"

// servedValues is the list of bucket label values of buckets, "" for every bucket.
func servedValues(buckets []int) string {
	if len(buckets) == contract.Buckets {
		return ""
	}
	values := make([]string, 0, len(buckets))
	for _, b := range buckets {
		values = append(values, contract.BucketLabel(b))
	}
	if len(values) == 0 {
		values = []string{noBuckets}
	}
	return strings.Join(values, ",")
}

// bucketSelector is the label selector of the children of buckets: "" for every bucket.
func bucketSelector(buckets []int) string {
	v := servedValues(buckets)
	if v == "" {
		return ""
	}
	return contract.LabelBucket + " in (" + v + ")"
}

// Rebucketing is a change of the buckets whose children the child informers hold: the
// new informers (and those of the refs that read kubecel's objects) are acquired and
// sync while the old ones keep serving, and Finish swaps them in.
type Rebucketing struct {
	w        *Watcher
	previous string
	children map[*ChildKind]*informers.Watch
	refs     map[*refKind][]hooked
	// kindOf and refOf are the rules the child kinds and refs belong to.
	kindOf map[*ChildKind]*Rule
	refOf  map[*refKind]*Rule
}

// Rebucket begins to make the child informers of every started rule hold the children
// of buckets; a rule started from now on gets informers of these buckets at once. It
// returns nil when they already do. On error nothing changed.
func (w *Watcher) Rebucket(ctx context.Context, buckets []int) (*Rebucketing, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	served := servedValues(buckets)
	if served == w.served {
		return nil, nil
	}
	rb := &Rebucketing{w: w, previous: w.served, children: map[*ChildKind]*informers.Watch{},
		refs: map[*refKind][]hooked{}, kindOf: map[*ChildKind]*Rule{}, refOf: map[*refKind]*Rule{}}
	w.served = served
	fail := func(err error) (*Rebucketing, error) {
		rb.finishLocked(false)
		return nil, err
	}
	for st := range w.started {
		for _, ck := range st.Children {
			cw, err := w.set.Acquire(ctx, w.childWatchKey(ck.GVR), w.setupChildInformer)
			if err != nil {
				return fail(err)
			}
			rb.children[ck], rb.kindOf[ck] = cw, st
		}
		for _, rk := range st.refs {
			if len(rk.ours) == 0 {
				continue
			}
			hs, err := w.watchOurs(ctx, st, rk)
			if err != nil {
				return fail(err)
			}
			rb.refs[rk], rb.refOf[rk] = hs, st
		}
	}
	return rb, nil
}

// Selector is the label selector of the buckets the change goes to.
func (rb *Rebucketing) Selector() string {
	return contract.LabelBucket + " in (" + rb.w.served + ")"
}

// Synced reports whether every new informer has synced.
func (rb *Rebucketing) Synced() bool {
	for _, cw := range rb.children {
		if !cw.Synced() {
			return false
		}
	}
	for _, hs := range rb.refs {
		if !hookedSynced(hs) {
			return false
		}
	}
	return true
}

// Finish swaps the new informers in for the rules that still run, and releases the old
// ones; with ok false it releases the new ones instead and goes back to the previous
// buckets (a rule started meanwhile keeps the new informers: its caches hold at least as
// much as the replica serves, whichever way the buckets changed). The caller keeps every
// reconcile out while it runs.
func (rb *Rebucketing) Finish(ok bool) {
	rb.w.mu.Lock()
	defer rb.w.mu.Unlock()
	rb.finishLocked(ok)
}

func (rb *Rebucketing) finishLocked(ok bool) {
	running := func(st *Rule) bool {
		_, ok := rb.w.started[st]
		return ok
	}
	for ck, cw := range rb.children {
		if !ok || !running(rb.kindOf[ck]) {
			rb.w.set.Release(cw)
			continue
		}
		old := ck.watch.Swap(cw)
		rb.w.set.Release(old)
	}
	for rk, hs := range rb.refs {
		if !ok || !running(rb.refOf[rk]) {
			rb.w.unhook(hs)
			continue
		}
		old := rk.ours
		rk.ours = hs
		rb.w.unhook(old)
	}
	if !ok {
		rb.w.served = rb.previous
	}
}
