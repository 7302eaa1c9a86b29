package reconcile

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubecel/kubecel/rules"
)

// TestDeadlineIsReportedAtTheThirdMiss: an evaluation the deadline stops is retried
// without a write twice in a row; the third miss in a row writes the error status, and
// the count starts again. (Here the deadline is 1 ns, so that every evaluation misses
// it.)
func TestDeadlineIsReportedAtTheThirdMiss(t *testing.T) {
	r := newFakeRigWith(t, newFakeAPI(t, fakeWidget(map[string]any{"message": "hi"})), fakeChildren, false, rules.Options{EvalTimeout: time.Nanosecond})
	var got [][]string
	for range 2*(deadlineRetries+1) - 1 {
		_, err := r.reconcile(t, "ns", "w")
		if !errors.Is(err, context.DeadlineExceeded) || IsTerminal(err) {
			t.Fatalf("error = %v, want the deadline's, retried (not terminal)", err)
		}
		got = append(got, describe(r.api.writes()))
	}
	status := []string{"patch widgets/status w"}
	want := [][]string{nil, nil, status, nil, nil}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("writes of each reconcile (-want +got):\n%s", diff)
	}
}
