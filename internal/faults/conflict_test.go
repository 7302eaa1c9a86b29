package faults

import (
	"fmt"
	"testing"
	"time"

	"github.com/kubecel/kubecel/internal/controlplane"
)

// TestConflictingSpecWrites: another client edits the widgets' specs as fast as it can
// while kubecel writes their status. Afterwards every status reports the last generation,
// kubecel's status writes stay bounded by the number of edits, and a quiet cluster gets
// no more writes from it (no status loop).
func TestConflictingSpecWrites(t *testing.T) {
	w := newWorld(t, "conflict")
	startKubecel(t, w.Rules, cp.Kubeconfig)
	const parents = 4
	for i := range parents {
		w.create(fmt.Sprintf("w%d", i), 0)
	}
	eventually(t, settle, w.converged)
	statusWrites := func() int {
		return kubecelWrites(t, func(e controlplane.AuditEvent) bool {
			return e.ObjectRef.Namespace == w.NS && e.ObjectRef.Resource == "widgets" && e.ObjectRef.Subresource == "status"
		})
	}
	before := statusWrites()
	edits := 0
	for end := time.Now().Add(outage()); time.Now().Before(end); edits++ {
		w.setValue(fmt.Sprintf("w%d", edits%parents), edits+1)
	}
	took := eventually(t, settle, w.converged)
	written := statusWrites() - before
	t.Logf("%d spec edits in %s; converged %s later with %d status writes", edits, outage(), took.Round(time.Millisecond), written)
	if written > edits+2*parents {
		t.Errorf("%d status writes for %d spec edits: status writes are retried without bound", written, edits)
	}

	quietFrom := kubecelWrites(t, inNamespaces(w.NS, w.Other))
	time.Sleep(3 * time.Second)
	if n := kubecelWrites(t, inNamespaces(w.NS, w.Other)) - quietFrom; n != 0 {
		t.Errorf("%d writes while nothing changed, want none", n)
	}
}
