package shard

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/lease"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

func TestMain(m *testing.M) { testenv.Main(m, controlplane.Options{}) }

// holders records which member works on each bucket (with how many workers), and
// reports two members at once.
type holders struct {
	t       *testing.T
	mu      sync.Mutex
	by      [rules.Buckets]string
	count   [rules.Buckets]int
	overlap atomic.Int64
	worked  atomic.Int64
}

func (h *holders) enter(b int, who string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if other := h.by[b]; other != "" && other != who {
		if h.overlap.Add(1) <= 5 {
			h.t.Errorf("bucket %d is worked on by %s and %s at once", b, other, who)
		}
	}
	h.by[b] = who
	h.count[b]++
	h.worked.Add(1)
}

func (h *holders) leave(b int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count[b]--; h.count[b] == 0 {
		h.by[b] = ""
	}
}

// fakeController is the engine's side of a member: it has no caches, and reports the
// moved parents reconciled at once.
type fakeController struct{ watched atomic.Int64 }

func (f *fakeController) WatchBuckets(context.Context, []int) error  { f.watched.Add(1); return nil }
func (f *fakeController) EnqueueMoved(_ func(int) bool, done func()) { done() }

// node is one member with workers that keep taking every bucket it serves.
type node struct {
	name   string
	m      *Member
	cancel context.CancelFunc
	done   chan error
}

func startNode(t *testing.T, ns, name string, h *holders) *node {
	t.Helper()
	opts := Options{Namespace: ns, Ring: "test", Timing: lease.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond}}
	m, err := New(opts, rest.CopyConfig(testenv.Config(t)), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	n := &node{name: name, m: m, cancel: cancel, done: make(chan error, 1)}
	go func() { n.done <- m.Run(ctx, &fakeController{}) }()
	for range 8 {
		go func() {
			r := rand.New(rand.NewPCG(rand.Uint64(), 0))
			for ctx.Err() == nil {
				b := r.IntN(rules.Buckets)
				end, ok := m.Begin(b)
				if !ok {
					continue
				}
				h.enter(b, name)
				// Most work is short; some takes long, as a reconcile that waits on the
				// API server does, so a handover that did not wait for it would overlap.
				work := time.Duration(r.IntN(2000)) * time.Microsecond
				if r.IntN(5) == 0 {
					work = time.Duration(20+r.IntN(80)) * time.Millisecond
				}
				time.Sleep(work)
				h.leave(b)
				end()
			}
		}()
	}
	t.Cleanup(func() { n.stop(t, false) })
	return n
}

// stop ends the member's loop and workers; leave deletes its Lease as a SIGTERM does,
// otherwise it stays as after a crash.
func (n *node) stop(t *testing.T, leave bool) {
	t.Helper()
	n.cancel()
	if err := <-n.done; err != nil {
		t.Errorf("member %s: Run = %v", n.name, err)
	}
	n.done <- nil // for the next stop
	if leave {
		if err := n.m.Leave(t.Context()); err != nil {
			t.Errorf("member %s: Leave = %v", n.name, err)
		}
	}
}

// covered waits until the nodes serve the one ring of all of them, each bucket once.
func covered(t *testing.T, nodes ...*node) {
	t.Helper()
	var ids []string
	for _, n := range nodes {
		ids = append(ids, n.m.Identity())
	}
	want := NewRing(ids...)
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		var union Set
		for _, n := range nodes {
			serving := n.m.servingNow()
			if ready, line := n.m.Status(); !ready || !n.m.agreed(want.Version()) {
				return false, fmt.Sprintf("%s: %s, want ring %s", n.name, line, want.Version())
			}
			if serving != want.Owned(n.m.Identity()) {
				return false, fmt.Sprintf("%s serves %v, its share of ring %s is %v", n.name, serving, want.Version(), want.Owned(n.m.Identity()))
			}
			union = union.Or(serving)
		}
		return union == All(), fmt.Sprintf("buckets served: %v", union)
	})
}

// TestHandover runs members on the control plane whose workers keep taking every bucket
// their member serves, and checks that no bucket is ever worked on by two members at
// once while members join, leave and crash, and that the survivors end up serving every
// bucket.
func TestHandover(t *testing.T) {
	ns := testenv.Namespace(t)
	h := &holders{t: t}
	a, b, c := startNode(t, ns, "a", h), startNode(t, ns, "b", h), startNode(t, ns, "c", h)
	covered(t, a, b, c)
	d := startNode(t, ns, "d", h)
	covered(t, a, b, c, d)
	b.stop(t, true) // leaves, as on SIGTERM
	covered(t, a, c, d)
	c.stop(t, false) // crashes: its Lease expires
	covered(t, a, d)
	e := startNode(t, ns, "e", h)
	covered(t, a, d, e)
	if n := h.overlap.Load(); n > 0 {
		t.Errorf("%d times a bucket was worked on by two members at once", n)
	}
	if h.worked.Load() < 1000 {
		t.Errorf("the workers took buckets only %d times: the test did not exercise the handover", h.worked.Load())
	}
	t.Logf("buckets taken %d times", h.worked.Load())
}

// agreed reports whether the member serves the ring of this version.
func (m *Member) agreed(version string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.served == version && m.ack == version
}
