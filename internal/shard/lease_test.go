package shard

import (
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubecel/kubecel/internal/lease"
	"github.com/kubecel/kubecel/internal/testenv"
)

// TestRenewWritesTheLatestAck: a renewal that waits for its turn behind another write
// writes the ring version acknowledged by then, never the one before: a Lease whose ack
// went back would tell the others that this member still keeps out of buckets it may
// have started on since.
func TestRenewWritesTheLatestAck(t *testing.T) {
	opts := Options{Namespace: testenv.Namespace(t), Ring: "acks", Timing: lease.Timing{LeaseDuration: time.Minute, RenewDeadline: 50 * time.Second, RetryPeriod: time.Second}}
	l := newLeaseClient(kubernetes.NewForConfigOrDie(testenv.Config(t)), opts, "me")
	if err := l.join(t.Context()); err != nil {
		t.Fatal(err)
	}
	var ack atomic.Pointer[string]
	old, next := "old-version", "new-version"
	ack.Store(&old)
	// Another write holds the turn; the renewal starts while "old" is acknowledged.
	l.writing.Lock()
	done := make(chan error, 1)
	go func() { done <- l.renew(t.Context(), func() string { return *ack.Load() }) }()
	testenv.WaitBlocked(t, "shard.(*leaseClient).renew")
	ack.Store(&next)
	l.writing.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lease, err := l.leases.Get(t.Context(), l.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := lease.Annotations[AnnotationAck]; got != next {
		t.Errorf("the Lease acknowledges %q, want %q, the version acknowledged when the renewal wrote", got, next)
	}
}
