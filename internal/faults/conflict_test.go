package faults

import (
	"fmt"
	"testing"
	"time"

	"github.com/kubecel/kubecel/internal/controlplane"
)

// TestConflictingSpecWrites: another client edits the widgets' specs as fast as it can
// while kubecel writes their status. Afterwards every status reports the last generation,
// kubecel's status writes stay close to the number of edits, and a quiet cluster gets
// no more writes from it (no status loop).
func TestConflictingSpecWrites(t *testing.T) {
	w := newWorld(t, "conflict")
	ctrl := startKubecel(t, w.Rules, cp.Kubeconfig)
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
	// About one write per edit; a write that triggers another (a status loop) doubles it.
	if limit := edits + edits/4 + 4*parents; written > limit {
		t.Errorf("%d status writes for %d spec edits, want at most %d: status writes are repeated without bound", written, edits, limit)
	}

	quietFrom := kubecelWrites(t, inNamespaces(w.NS, w.Other))
	w.looked(ctrl, w.names()...)
	if n := kubecelWrites(t, inNamespaces(w.NS, w.Other)) - quietFrom; n != 0 {
		t.Errorf("%d writes while nothing changed, want none", n)
	}
}
