package leader

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fakeLock is a resourcelock.Interface that stores the record in memory.
type fakeLock struct {
	identity string
	rec      resourcelock.LeaderElectionRecord
	updates  int
}

func (f *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec := f.rec
	return &rec, []byte(rec.HolderIdentity), nil
}
func (f *fakeLock) Create(_ context.Context, rec resourcelock.LeaderElectionRecord) error {
	f.rec = rec
	return nil
}
func (f *fakeLock) Update(_ context.Context, rec resourcelock.LeaderElectionRecord) error {
	f.rec = rec
	f.updates++
	return nil
}
func (f *fakeLock) RecordEvent(string) {}
func (f *fakeLock) Identity() string   { return f.identity }
func (f *fakeLock) Describe() string   { return "test/lease" }

func TestFencedLock(t *testing.T) {
	ctx := t.Context()
	inner := &fakeLock{identity: "me"}
	lock := &fencedLock{Interface: inner, writeWindow: time.Hour}
	transport := &fencedTransport{mayWrite: lock.mayWrite, what: "the Lease test/lease", next: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})}
	canWrite := func() bool {
		req := httptest.NewRequest(http.MethodPatch, "https://apiserver/api/v1/namespaces/x/configmaps/y", nil)
		_, err := transport.RoundTrip(req)
		return err == nil
	}
	get := httptest.NewRequest(http.MethodGet, "https://apiserver/api/v1/namespaces/x/configmaps/y", nil)
	if _, err := transport.RoundTrip(get); err != nil {
		t.Errorf("a read was refused: %v", err)
	}
	if canWrite() {
		t.Error("a write passed before the Lease was ever acquired")
	}
	if err := lock.Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if !canWrite() {
		t.Error("a write was refused right after acquiring the Lease")
	}

	// Another replica took over: reading the Lease stops writes, and a release (the
	// elector releases by the last record it saw) is refused.
	inner.rec.HolderIdentity = "other"
	if _, _, err := lock.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if canWrite() {
		t.Error("a write passed after reading another replica's Lease")
	}
	if err := lock.Update(ctx, resourcelock.LeaderElectionRecord{}); err == nil || inner.updates != 0 {
		t.Errorf("release of another's Lease: err = %v, %d updates; want refused", err, inner.updates)
	}

	// Acquiring again opens writes; a release of our own Lease goes through and closes them.
	if err := lock.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if !canWrite() {
		t.Error("a write was refused after renewing")
	}
	if err := lock.Update(ctx, resourcelock.LeaderElectionRecord{}); err != nil {
		t.Errorf("release of our own Lease: %v", err)
	}
	if canWrite() {
		t.Error("a write passed after releasing the Lease")
	}

	// A renewal older than the window no longer allows writes.
	expired := &fencedLock{Interface: &fakeLock{identity: "me"}, writeWindow: 0}
	if err := expired.Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	if expired.mayWrite() {
		t.Error("mayWrite with a zero window")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
