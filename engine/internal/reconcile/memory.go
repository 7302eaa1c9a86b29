package reconcile

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/engine/internal/metrics"
	"github.com/kubecel/kubecel/engine/internal/watch"
)

// parentMemo is everything the reconciler keeps about one parent (a rule's key) between
// its reconciles. memory holds them, and forgets a parent in one place.
type parentMemo struct {
	// statusless is the UID of the parent when its status cannot be written (its CRD
	// has no status subresource): reported once, not at every reconcile.
	statusless types.UID
	// lastFailure is the last failure reported on the parent ("uid|reason|message"),
	// so that each is recorded once.
	lastFailure string
	// notReadySince is since when the parent has been not Ready, for the
	// kubecel_parents_not_ready gauges; zero while it is Ready or was never seen.
	notReadySince time.Time
	// resume is the work a turn that yielded left for the next (resume.go).
	resume *resumePoint
	// finalizerSent is set once the rule's finalizer was sent to the parent and not
	// removed since, while the cache may not show it (finalize.go).
	finalizerSent bool
	// gone is the record of a deleted parent whose children are being deleted
	// (teardown.go). It outlives forget: it is about the parent that went.
	gone *goneParent
	// deadlines counts the evaluations in a row that the deadline stopped and whose
	// error was not reported yet (deadline.go).
	deadlines int
}

// live reports whether the memo holds anything about a live parent.
func (p *parentMemo) live() bool {
	return p.statusless != "" || p.lastFailure != "" || !p.notReadySince.IsZero() || p.resume != nil || p.finalizerSent || p.deadlines > 0
}

// goneParent is the record of a parent whose delete the rule's informer reported, until
// its children are deleted (and goneTTL after).
type goneParent struct {
	uid types.UID
	// sure is true when the delete came from a watch event on an informer without a
	// label selector: the parent was deleted, not relabelled out of the selector or
	// missed during a relist.
	sure bool
	// orphan is true when the parent was deleted with the orphan propagation policy.
	orphan bool
	// done is when its children were all deleted; zero while some are left.
	done time.Time
}

// goneTTL is how long a deleted parent is remembered after its children were deleted,
// so that their delete events, which requeue its key, need no request to the API server.
const goneTTL = 2 * time.Minute

// memory holds the parentMemo of every parent the reconciler keeps something about.
// The workqueue never hands one key to two workers at once, but the watches' handlers
// and the metrics' scrapes read and write it too: every access is under mu.
type memory struct {
	mu sync.Mutex
	m  map[watch.Key]*parentMemo
	// swept is when the records of parents whose teardown is done were last dropped.
	swept time.Time
}

func newMemory() *memory { return &memory{m: map[watch.Key]*parentMemo{}} }

// update calls fn with the parent's memo, made when it has none, and drops the memo when
// fn leaves it empty.
func (m *memory) update(key watch.Key, fn func(*parentMemo)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.m[key]
	if p == nil {
		p = &parentMemo{}
	}
	fn(p)
	if p.live() || p.gone != nil {
		m.m[key] = p
	} else {
		delete(m.m, key)
	}
}

// view returns a copy of the parent's memo (a zero one when there is none).
func (m *memory) view(key watch.Key) parentMemo {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.m[key]; p != nil {
		return *p
	}
	return parentMemo{}
}

// forget drops everything known of a live parent: the parent of key is no longer in its
// rule's cache (deleted, or no longer selected). A teardown record stays until its
// children are deleted.
func (m *memory) forget(key watch.Key) {
	m.update(key, func(p *parentMemo) { *p = parentMemo{gone: p.gone} })
}

// forgetRule drops the resume points of a rule that stopped: its next version starts
// over.
func (m *memory) forgetRule(rule string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, p := range m.m {
		if key.Rule == rule {
			p.resume = nil
			if !p.live() && p.gone == nil {
				delete(m.m, key)
			}
		}
	}
}

// takeResume returns and forgets the parent's resume point, if any.
func (m *memory) takeResume(key watch.Key) *resumePoint {
	var r *resumePoint
	m.update(key, func(p *parentMemo) { r, p.resume = p.resume, nil })
	return r
}

// addGone records the delete of a parent. Records of parents whose children were
// deleted more than goneTTL ago are dropped, in a sweep at most every goneTTL/4, so that
// deleting many parents at once does not walk the whole memory at every delete.
func (m *memory) addGone(key watch.Key, g *goneParent) {
	m.mu.Lock()
	if now := time.Now(); now.Sub(m.swept) > goneTTL/4 {
		m.swept = now
		for k, p := range m.m {
			if p.gone != nil && !p.gone.done.IsZero() && now.Sub(p.gone.done) > goneTTL {
				p.gone = nil
				if !p.live() {
					delete(m.m, k)
				}
			}
		}
	}
	m.mu.Unlock()
	m.update(key, func(p *parentMemo) {
		if old := p.gone; old != nil && old.uid == g.uid {
			g.orphan = g.orphan || old.orphan
		}
		p.gone = g
	})
}

// gone returns the parent's teardown record.
func (m *memory) gone(key watch.Key) (goneParent, bool) {
	p := m.view(key)
	if p.gone == nil {
		return goneParent{}, false
	}
	return *p.gone, true
}

// dropGone forgets the teardown record: its parent was not deleted after all.
func (m *memory) dropGone(key watch.Key) {
	m.update(key, func(p *parentMemo) { p.gone = nil })
}

// finishGone marks the teardown of the parent with this UID done.
func (m *memory) finishGone(key watch.Key, uid types.UID) {
	m.update(key, func(p *parentMemo) {
		if p.gone != nil && p.gone.uid == uid {
			p.gone.done = time.Now()
		}
	})
}

// observeReady records whether a reconcile found the parent Ready.
func (m *memory) observeReady(key watch.Key, ready bool, now time.Time) {
	m.update(key, func(p *parentMemo) {
		switch {
		case ready:
			p.notReadySince = time.Time{}
		case p.notReadySince.IsZero():
			p.notReadySince = now
		}
	})
}

// notReady reads the kubecel_parents_not_ready gauges: the count and the longest time
// not Ready of every rule named (a rule with every parent Ready reads 0). A parent
// enters at the first reconcile that finds it not Ready and leaves at the first that
// finds it Ready; a read also forgets the not Ready parents that live says are gone,
// whose rule stopped, or that another replica serves now, so that the gauges never count
// a parent nobody reconciles here.
func (m *memory) notReady(rules []string, live func(watch.Key) bool, now time.Time) []metrics.NotReady {
	byRule := make(map[string]*metrics.NotReady, len(rules))
	out := make([]metrics.NotReady, len(rules))
	for i, r := range rules {
		out[i].Rule = r
		byRule[r] = &out[i]
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, p := range m.m {
		if p.notReadySince.IsZero() {
			continue
		}
		r := byRule[key.Rule]
		if r == nil || !live(key) {
			p.notReadySince = time.Time{}
			if !p.live() && p.gone == nil {
				delete(m.m, key)
			}
			continue
		}
		r.Count++
		r.Oldest = max(r.Oldest, now.Sub(p.notReadySince))
	}
	return out
}
