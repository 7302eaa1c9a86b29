package reconcile

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

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
