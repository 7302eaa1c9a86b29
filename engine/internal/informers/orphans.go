package informers

import (
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// An object deleted with the orphan propagation policy (kubectl delete
// --cascade=orphan) carries the orphan finalizer only until the garbage collector has
// removed the owner references of its dependents: then the finalizer goes, and the
// object, still terminating while other finalizers hold it, looks like one deleted
// with the background policy. A reconcile that reads the cache after that would take
// the deletion for an ordinary one and delete the children the user meant to keep.
//
// So the sighting is taken where no later state can overtake it: in the informers'
// transform, which sees every version of an object in watch order before the cache
// holds it. From the first version that shows the orphan finalizer on a terminating
// object, every later version of the same UID is cached as deleted with the orphan
// policy (Object.DeletedWithOrphan), the final one of its delete event included.

// orphanTTL bounds how long a sighting is kept for an object whose delete event never
// came (its informer stopped first).
const orphanTTL = time.Hour

// orphans remembers the UIDs seen terminating with the orphan finalizer.
type orphans struct {
	mu    sync.Mutex
	seen  map[types.UID]time.Time
	swept time.Time
}

// note records u's sighting, if it has one or had one, and reports whether u is being
// deleted with the orphan policy. The final version of a deleted object (terminating
// with no finalizer left, as a delete event shows it) ends the sighting.
func (o *orphans) note(u *unstructured.Unstructured) bool {
	if u.GetDeletionTimestamp() == nil {
		return false
	}
	finalizers := u.GetFinalizers()
	uid := u.GetUID()
	o.mu.Lock()
	defer o.mu.Unlock()
	if slices.Contains(finalizers, metav1.FinalizerOrphanDependents) {
		now := time.Now()
		if o.seen == nil {
			o.seen = map[types.UID]time.Time{}
		}
		if now.Sub(o.swept) > orphanTTL/4 {
			o.swept = now
			for k, at := range o.seen {
				if now.Sub(at) > orphanTTL {
					delete(o.seen, k)
				}
			}
		}
		o.seen[uid] = now
		return true
	}
	_, seen := o.seen[uid]
	if seen && len(finalizers) == 0 {
		delete(o.seen, uid)
	}
	return seen
}
