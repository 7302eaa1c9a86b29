package watch

import (
	"context"
	"strings"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/rules/contract"
)

// With sharding, a replica's caches hold what the buckets it serves need. Child
// informers hold only the children of those buckets (selected by contract.LabelBucket).
// Parents carry no bucket label, so parent informers list every parent, but their
// transform keeps whole only the parents of the served buckets and the others as stubs
// (informers.Key.Whole): a stub has what the keys and the parent handler need (queue the
// key, which the sharded queue then drops; tell of a deleted parent), and a reconcile
// that reads one fails (informers.ErrStub) instead of taking the parent for gone. A rule
// whose rollout reads its parents keeps them whole (Rule.WholeParents). Refs read every
// object they would without sharding (a ref may read any object), from informers of
// their own that hold every object whole (a ref of a parent kind shares no informer with
// the parents then); kubecel's own objects of the other buckets from an informer of
// those buckets (ourWatchKeys).
//
// When the buckets change, new child and parent informers for them are acquired and
// sync while the old ones keep serving, and Finish swaps them in: the member grows what
// it serves only after the swap and shrinks it before, so a parent it serves is always
// cached whole, and a parent it gains is reconciled from the new, whole cache.

// noBuckets selects no child and no whole parent: what a replica watches before it
// serves a ring.
const noBuckets = informers.NoBuckets

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

// Rebucketing is a change of the buckets whose children the child informers hold and
// whose parents the parent informers hold whole: the new informers (and those of the
// refs that read kubecel's objects) are acquired and sync while the old ones keep
// serving, and Finish swaps them in.
type Rebucketing struct {
	w        *Watcher
	previous string
	children map[*ChildKind]*informers.Watch
	parents  map[*parentWatch]hooked
	refs     map[*refKind][]hooked
	// kindOf, parentOf and refOf are the rules the child kinds, parent watches and
	// refs belong to.
	kindOf   map[*ChildKind]*Rule
	parentOf map[*parentWatch]*Rule
	refOf    map[*refKind]*Rule
}

// Rebucket begins to make the child informers of every started rule hold the children
// of buckets, and its parent informers those parents whole; a rule started from now on
// gets informers of these buckets at once. It returns nil when they already do. On
// error nothing changed.
func (w *Watcher) Rebucket(ctx context.Context, buckets []int) (*Rebucketing, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	served := servedValues(buckets)
	if served == w.served {
		return nil, nil
	}
	rb := &Rebucketing{w: w, previous: w.served, children: map[*ChildKind]*informers.Watch{}, parents: map[*parentWatch]hooked{},
		refs: map[*refKind][]hooked{}, kindOf: map[*ChildKind]*Rule{}, parentOf: map[*parentWatch]*Rule{}, refOf: map[*refKind]*Rule{}}
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
		for ns, pw := range st.parents {
			if w.parentWatchKey(st, ns) == pw.watch().Key() {
				continue // every parent whole (Rule.WholeParents)
			}
			h, err := w.watchParents(ctx, st, ns)
			if err != nil {
				return fail(err)
			}
			rb.parents[pw], rb.parentOf[pw] = h, st
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
	for _, h := range rb.parents {
		if !h.watch.Synced() {
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
	for pw, h := range rb.parents {
		if !ok || !running(rb.parentOf[pw]) {
			rb.w.unhook([]hooked{h})
			continue
		}
		old := pw.cur.Swap(&h)
		rb.w.unhook([]hooked{*old})
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
