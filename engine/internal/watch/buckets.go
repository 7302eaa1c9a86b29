package watch

import (
	"context"
	"strings"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/rules"
)

// With sharding, child informers hold only the children of the buckets the replica
// serves (selected by rules.LabelBucket). Parent informers hold every parent, and ref
// informers every object they would without sharding: a ref may read any object.

// noBuckets selects no child: what a replica watches before it serves a ring.
const noBuckets = "none"

// bucketSelector is the label selector of the children of buckets: "" for every bucket.
func bucketSelector(buckets []int) string {
	if len(buckets) == rules.Buckets {
		return ""
	}
	values := make([]string, 0, len(buckets))
	for _, b := range buckets {
		values = append(values, rules.BucketLabel(b))
	}
	if len(values) == 0 {
		values = []string{noBuckets}
	}
	return rules.LabelBucket + " in (" + strings.Join(values, ",") + ")"
}

// Rebucketing is a change of the buckets whose children the child informers hold: the
// new informers are acquired and sync while the old ones keep serving, and Finish swaps
// them in.
type Rebucketing struct {
	w        *Watcher
	previous string
	next     map[*ChildKind]*informers.Watch
}

// Rebucket begins to make the child informers of rules hold the children of buckets.
// It returns nil when they already do. On error nothing changed.
func (w *Watcher) Rebucket(ctx context.Context, buckets []int, rules []*Rule) (*Rebucketing, error) {
	selector := bucketSelector(buckets)
	if selector == w.buckets {
		return nil, nil
	}
	rb := &Rebucketing{w: w, previous: w.buckets, next: map[*ChildKind]*informers.Watch{}}
	w.buckets = selector
	for _, st := range rules {
		for _, ck := range st.Children {
			cw, err := w.set.Acquire(ctx, w.childWatchKey(ck.GVR), w.setupChildInformer)
			if err != nil {
				rb.Finish(func(*ChildKind) bool { return false }, false)
				return nil, err
			}
			rb.next[ck] = cw
		}
	}
	return rb, nil
}

// Selector is the label selector of the buckets the change goes to.
func (rb *Rebucketing) Selector() string { return rb.w.buckets }

// Synced reports whether every new informer has synced.
func (rb *Rebucketing) Synced() bool {
	for _, cw := range rb.next {
		if !cw.Synced() {
			return false
		}
	}
	return true
}

// Finish swaps the new informers in for the child kinds running says still run, and
// releases the old ones; with ok false it releases the new ones instead and goes back
// to the previous buckets (a rule started meanwhile keeps the new informers: its
// caches hold at least as much as the replica serves, whichever way the buckets
// changed). The caller keeps every reconcile out while it runs.
func (rb *Rebucketing) Finish(running func(*ChildKind) bool, ok bool) {
	for ck, cw := range rb.next {
		if !ok || !running(ck) {
			rb.w.set.Release(cw)
			continue
		}
		old := ck.watch
		ck.watch = cw
		rb.w.set.Release(old)
	}
	if !ok {
		rb.w.buckets = rb.previous
	}
}
