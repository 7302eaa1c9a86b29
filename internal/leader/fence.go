package leader

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fencedLock is the Lease lock with two guards that client-go's elector lacks.
//
// It remembers when this replica last renewed the Lease, and allows writes (see
// fencedTransport) only for writeWindow (the renew deadline) after the start of that
// renewal. A standby takes over no sooner than the lease duration after it saw that
// renewal, which is later still, so a leader that froze (SIGSTOP, a stalled node) and
// wakes up finds its writes refused instead of racing the new leader, until its elector
// notices the loss and the process exits.
//
// Reading the Lease with another holder in it stops writes at once. And it refuses to
// release a Lease that another replica holds: client-go's elector, when it gives up
// without having read the Lease since its last renewal, releases it by the record it
// last saw, which would clear the new leader's hold.
type fencedLock struct {
	resourcelock.Interface
	writeWindow time.Duration

	mu         sync.Mutex
	writeUntil time.Time // monotonic
	holder     string    // holder in the Lease as last read
}

func (l *fencedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	if err == nil {
		l.mu.Lock()
		l.holder = rec.HolderIdentity
		if l.holder != l.Identity() {
			l.writeUntil = time.Time{}
		}
		l.mu.Unlock()
	}
	return rec, raw, err
}

func (l *fencedLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	err := l.Interface.Create(ctx, rec)
	if err == nil {
		l.renewed(start, rec)
	}
	return err
}

func (l *fencedLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	if rec.HolderIdentity == "" { // a release
		l.mu.Lock()
		l.writeUntil = time.Time{}
		holder := l.holder
		l.mu.Unlock()
		if holder != l.Identity() {
			return fmt.Errorf("not releasing the Lease: %s holds it", holder)
		}
	}
	err := l.Interface.Update(ctx, rec)
	if err == nil {
		l.renewed(start, rec)
	}
	return err
}

func (l *fencedLock) renewed(start time.Time, rec resourcelock.LeaderElectionRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holder = rec.HolderIdentity
	if rec.HolderIdentity == l.Identity() {
		l.writeUntil = start.Add(l.writeWindow)
	}
}

// mayWrite reports whether this replica renewed the Lease recently enough to write.
func (l *fencedLock) mayWrite() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Now().Before(l.writeUntil)
}

// FenceWrites makes every write request sent with cfg fail while mayWrite is false;
// reads always pass. what names the guard in the error, as in "the Lease ns/name". The
// leader elector and the sharding membership both fence a replica's writes with it.
func FenceWrites(cfg *rest.Config, mayWrite func() bool, what string) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &fencedTransport{next: rt, mayWrite: mayWrite, what: what}
	})
}

// fencedTransport refuses write requests while mayWrite is false.
type fencedTransport struct {
	next     http.RoundTripper
	mayWrite func() bool
	what     string
}

func (t *fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if !t.mayWrite() {
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, fmt.Errorf("%s %s refused: this replica has not renewed %s recently enough to be sure it may still write", req.Method, req.URL.Path, t.what)
		}
	}
	return t.next.RoundTrip(req)
}
