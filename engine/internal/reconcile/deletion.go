package reconcile

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/engine/internal/metrics"
)

// deletion does all of the reconciler's deleting and releasing of children: it prunes
// the children a rule no longer produces (prune.go), releases Keep children instead of
// deleting them (keep.go), lets go of a parent the rule no longer selects (release.go),
// tears down the children of a deleted parent (teardown.go) and finalizes a parent being
// deleted (finalize.go). The Reconciler decides when: it hands deletion a parent that is
// gone, being deleted or replaced, and, after a reconcile that applied everything, what
// the rule still produces.
//
// It owns the state of deletion that outlives one reconcile: the deletes sent and not
// yet seen by the informers (deleting), and the parents seen deleted whose children are
// being deleted (parentMemo.gone). It removes the rules' finalizers through finalizers, which it
// shares with the Reconciler (that adds them before a child garbage collection cannot
// reach).
//
// Invariants: only proven children of the rule and the parent are deleted or released;
// each delete carries a UID precondition (and, in a teardown, the cached resourceVersion);
// a child whose delete is in flight is not deleted again; at most batch children are let
// go of per turn; the rule's finalizer is removed only when every delete of the parent's
// children was sent (release) or they are gone (finalize), or at once when the parent is
// deleted with the orphan policy and its children stay.
type deletion struct {
	send    writer
	dryRun  bool
	batch   int
	metrics *metrics.Metrics
	events  recorder
	// finalizers removes the rule's finalizer once a parent's children are let go of.
	finalizers *finalizers

	// deleting holds the children deleted whose informers have not shown it yet.
	deleting *deleting
	// memory holds, among what is kept per parent, the records of the parents seen
	// deleted whose children are being deleted (parentMemo.gone).
	memory *memory
}

// childDeleted is told of a child its informer saw deleted: a delete of it is no longer
// in flight.
func (d *deletion) childDeleted(uid types.UID) { d.deleting.gone(uid) }

// deleting remembers the children kubecel deleted until their informer reports them
// gone, so that a parent's next turn (a reconcile yields after a batch of writes, and the
// next may come before the delete events) does not send the same deletes again. An entry
// older than deletingTTL no longer counts: a delete event that never came (the child
// left the informer's selector some other way) then costs one more delete, not a child
// left behind.
type deleting struct {
	mu sync.Mutex
	m  map[types.UID]time.Time
	// swept is when entries older than deletingTTL were last forgotten.
	swept time.Time
}

const deletingTTL = 30 * time.Second

func newDeleting() *deleting { return &deleting{m: map[types.UID]time.Time{}} }

// sent records a delete the server accepted.
func (d *deleting) sent(uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	if now.Sub(d.swept) > deletingTTL {
		d.swept = now
		for u, at := range d.m {
			if now.Sub(at) > deletingTTL {
				delete(d.m, u)
			}
		}
	}
	d.m[uid] = now
}

// gone forgets a child its informer saw deleted.
func (d *deleting) gone(uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, uid)
}

// pending reports whether a delete of the child was sent and its informer has not
// reported it gone yet.
func (d *deleting) pending(uid types.UID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	at, ok := d.m[uid]
	return ok && time.Since(at) <= deletingTTL
}
