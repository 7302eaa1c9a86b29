package shard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/lease"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

func TestMain(m *testing.M) { testenv.Main(m, controlplane.Options{}) }

// outlast is how long a reconcile of a bucket goes on writing after its member stopped
// serving the bucket, unless another member writes the bucket first: every handover
// meets a reconcile that started before it, and a member that handed a bucket on before
// its reconcile ended is caught writing after the new owner.
const outlast = 2 * time.Second

// ledger records the writes that the members' workers send through their fenced
// clients. A write is stale when another member wrote the bucket since the writer's
// reconcile of it began: the bucket changed hands under a running reconcile, or a
// member that lost the ring still wrote.
type ledger struct {
	mu     sync.Mutex
	n      int64                              // writes so far
	last   [contract.Buckets]map[string]int64 // per bucket, each member's last write
	stale  []string                           // the first stale writes
	nStale int
}

func (l *ledger) now() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *ledger) write(b int, who string, began int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for other, n := range l.last[b] {
		if other != who && n > began {
			if l.nStale++; len(l.stale) < 5 {
				l.stale = append(l.stale, fmt.Sprintf("bucket %d: %s wrote it in a reconcile begun at write %d, after %s wrote it (write %d)", b, who, began, other, n))
			}
		}
	}
	l.n++
	if l.last[b] == nil {
		l.last[b] = map[string]int64{}
	}
	l.last[b][who] = l.n
}

// takenOver reports whether another member wrote the bucket after write began.
func (l *ledger) takenOver(b int, who string, began int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for other, n := range l.last[b] {
		if other != who && n > began {
			return true
		}
	}
	return false
}

// writtenSince reports whether one of the members wrote each bucket after write mark.
func (l *ledger) writtenSince(mark int64, members ...string) (bool, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for b := range contract.Buckets {
		written := false
		for _, m := range members {
			written = written || l.last[b][m] > mark
		}
		if !written {
			return false, fmt.Sprintf("bucket %d not written by %v since write %d", b, members, mark)
		}
	}
	return true, ""
}

// freezer holds a member's Lease writes while frozen, as a process whose renewals
// stall (a frozen network path, a stuck client) while its workers go on. Thawed, the
// held requests fail.
type freezer struct {
	mu     sync.Mutex
	frozen chan struct{} // closed when thawed; nil while not frozen
}

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen = make(chan struct{})
}

func (f *freezer) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.frozen)
}

func (f *freezer) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		f.mu.Lock()
		frozen := f.frozen
		f.mu.Unlock()
		if frozen != nil && req.Method != http.MethodGet && strings.Contains(req.URL.Path, "/leases") {
			select {
			case <-frozen:
			case <-req.Context().Done():
			}
			return nil, errors.New("the member was frozen")
		}
		return rt.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// fakeController is the engine's side of a member: it has no caches, and reports the
// moved parents reconciled at once.
type fakeController struct{}

func (fakeController) WatchBuckets(context.Context, []int) error  { return nil }
func (fakeController) EnqueueMoved(_ func(int) bool, done func()) { done() }

// node is one member with a worker that reconciles every bucket its member serves, for as
// long as it serves it, writing the bucket every pass through its member's fenced client.
type node struct {
	name    string
	m       *Member
	freezer *freezer
	write   http.RoundTripper // the member's fenced client, ending at the ledger
	cancel  context.CancelFunc
	done    chan error    // Run's result
	worked  chan struct{} // closed when the worker has stopped
	passes  atomic.Int64
	refused atomic.Int64 // writes the fence refused
	stopped bool
}

func startNode(t *testing.T, ns, name string, l *ledger) *node {
	t.Helper()
	opts := Options{Namespace: ns, Ring: "test", Timing: lease.Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond}}
	cfg := rest.CopyConfig(testenv.Config(t))
	n := &node{name: name, freezer: &freezer{}, done: make(chan error, 1), worked: make(chan struct{})}
	cfg.Wrap(n.freezer.wrap)
	m, err := New(opts, cfg, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	n.m = m
	// The same chain of transports as the member's requests to the API server, fence
	// included, with the ledger in place of the server.
	n.write = cfg.WrapTransport(roundTripper(func(req *http.Request) (*http.Response, error) {
		b, err := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/buckets/"))
		if err != nil {
			return nil, err
		}
		began, err := strconv.ParseInt(req.Header.Get("Began"), 10, 64)
		if err != nil {
			return nil, err
		}
		l.write(b, name, began)
		return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
	}))
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	n.cancel = cancel
	go func() { n.done <- m.Run(ctx, fakeController{}) }()
	go n.work(ctx, l)
	t.Cleanup(func() { n.stop(t, false) })
	return n
}

// reconcile is the worker's hold on one bucket.
type reconcile struct {
	end      func()
	began    int64     // the ledger's write count when it began
	released time.Time // when the member stopped serving the bucket
}

// work reconciles every bucket the member serves, one reconcile per bucket for as long
// as the member serves it, which writes the bucket every pass. Once the member no longer
// serves the bucket, the reconcile still writes for outlast, or until another member
// wrote the bucket; a refused write ends it.
func (n *node) work(ctx context.Context, l *ledger) {
	defer close(n.worked)
	var held [contract.Buckets]*reconcile
	defer func() {
		for _, r := range held {
			if r != nil {
				r.end()
			}
		}
	}()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		for b := range contract.Buckets {
			r := held[b]
			if r == nil {
				end, ok := n.m.Begin(b)
				if !ok {
					continue
				}
				r = &reconcile{end: end, began: l.now()}
				held[b] = r
			}
			last := false
			if !n.m.Serves(b) {
				if r.released.IsZero() {
					r.released = time.Now()
				}
				last = time.Since(r.released) > outlast || l.takenOver(b, n.name, r.began)
			}
			if err := n.send(ctx, b, r.began); err != nil || last {
				r.end()
				held[b] = nil
			}
		}
		n.passes.Add(1)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (n *node) send(ctx context.Context, b int, began int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, "http://ledger/buckets/"+strconv.Itoa(b), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Began", strconv.FormatInt(began, 10))
	resp, err := n.write.RoundTrip(req)
	if err != nil {
		n.refused.Add(1)
		return err
	}
	return resp.Body.Close()
}

// stop ends the member's loop and worker and returns what Run returned; leave deletes
// its Lease as a SIGTERM does, otherwise it stays as after a crash.
func (n *node) stop(t *testing.T, leave bool) error {
	t.Helper()
	if n.stopped {
		return nil
	}
	n.stopped = true
	n.cancel()
	<-n.worked
	err := <-n.done
	if leave {
		if err := n.m.Leave(t.Context()); err != nil {
			t.Errorf("member %s: Leave = %v", n.name, err)
		}
	}
	return err
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

// TestHandover runs members on the control plane, each with a worker that keeps a
// reconcile running on every bucket its member serves, writing the bucket through the
// member's fenced client; a reconcile outlasts its member's serving of the bucket (see
// outlast), so that every handover meets running reconciles. While members join, leave,
// crash, and one freezes (its Lease renewals stall while its worker goes on), it checks
// that no member ever writes a bucket that another member wrote since its reconcile of
// it began, and that the survivors end up serving every bucket.
func TestHandover(t *testing.T) {
	ns := testenv.Namespace(t)
	l := &ledger{}
	a, b, c := startNode(t, ns, "a", l), startNode(t, ns, "b", l), startNode(t, ns, "c", l)
	covered(t, a, b, c)
	d := startNode(t, ns, "d", l)
	covered(t, a, b, c, d)
	if err := b.stop(t, true); err != nil { // leaves, as on SIGTERM
		t.Errorf("member b: Run = %v", err)
	}
	covered(t, a, c, d)
	if err := c.stop(t, false); err != nil { // crashes: its Lease expires
		t.Errorf("member c: Run = %v", err)
	}
	covered(t, a, d)
	e := startNode(t, ns, "e", l)
	covered(t, a, d, e)

	// d freezes: its renewals stall, its worker goes on. a and e take its buckets over
	// once its Lease expires; every write d's worker sends from then on must be refused.
	d.freezer.freeze()
	covered(t, a, e)
	mark := l.now()
	testenv.Eventually(t, time.Minute, func() (bool, string) { return l.writtenSince(mark, "a", "e") })
	passes := d.passes.Load()
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		return d.passes.Load() >= passes+2, "d's worker has not tried its buckets again since a and e wrote them"
	})
	d.freezer.thaw()
	select {
	case err := <-d.done:
		d.done <- err // for stop
		if err == nil {
			t.Error("the frozen member's Run returned nil once thawed, want the error of a lost Lease")
		}
	case <-time.After(time.Minute):
		t.Error("the frozen member's Run still runs a minute after it was thawed")
	}
	if d.refused.Load() == 0 {
		t.Error("the fence refused none of the frozen member's writes: the test did not exercise it")
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.stale {
		t.Error(s)
	}
	if l.nStale > len(l.stale) {
		t.Errorf("and %d more stale writes", l.nStale-len(l.stale))
	}
	if l.n < 10000 {
		t.Errorf("the workers wrote only %d times: the test did not exercise the handover", l.n)
	}
	t.Logf("%d writes, %d refused by the frozen member's fence", l.n, d.refused.Load())
}

// agreed reports whether the member serves the ring of this version.
func (m *Member) agreed(version string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.served == version && m.ack == version
}
