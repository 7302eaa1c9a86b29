package watch

import (
	"testing"
	"time"

	"github.com/kubecel/kubecel/internal/testenv"
)

// TestDrainWaitsForReconciles: a reconcile that entered a rule before it stopped holds
// Drain until it leaves, and none enters once the rule is stopped. A removed rule's
// release runs after Drain, so no reconcile of the old rule adds its finalizer after the
// release removed it.
func TestDrainWaitsForReconciles(t *testing.T) {
	st := &Rule{}
	if !st.Enter() {
		t.Fatal("Enter on a running rule = false")
	}
	st.stopped.Store(true)
	drained := make(chan struct{})
	go func() {
		st.Drain()
		close(drained)
	}()
	// Drain waits for the reconcile: once it is blocked on the lock, it must not have
	// returned.
	testenv.WaitBlocked(t, "watch.(*Rule).Drain")
	select {
	case <-drained:
		t.Fatal("Drain returned while a reconcile that entered before the stop was still running")
	default:
	}
	st.Leave()
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		select {
		case <-drained:
			return true, ""
		default:
			return false, "Drain has not returned after the reconcile left"
		}
	})
	if st.Enter() {
		t.Error("Enter on a stopped rule = true")
	}
}
