package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/util/workqueue"
)

// callQueue records the calls requeue makes; any other call panics (nil interface).
type callQueue struct {
	workqueue.TypedRateLimitingInterface[Key]
	calls []string
}

func (q *callQueue) Forget(Key)         { q.calls = append(q.calls, "forget") }
func (q *callQueue) AddRateLimited(Key) { q.calls = append(q.calls, "backoff") }
func (q *callQueue) AddAfter(_ Key, d time.Duration) {
	q.calls = append(q.calls, "after "+d.String())
}

// TestRequeue: the worker's one decision, from a reconcile's result and error, to
// forget the key, retry it with backoff, or look at it again after a delay.
func TestRequeue(t *testing.T) {
	failed := errors.New("apply failed")
	tests := []struct {
		name string
		res  result
		err  error
		want []string
	}{
		{"done", result{}, nil, []string{"forget"}},
		{"done, look again later", result{requeueAfter: 5 * time.Second}, nil, []string{"forget", "after 5s"}},
		{"failed", result{}, failed, []string{"backoff"}},
		{"failed, retry at a fixed pace", result{requeueAfter: conflictRetry}, failed, []string{"after 30s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &callQueue{}
			requeue(q, Key{Rule: "r", Namespace: "ns", Name: "p"}, tt.res, tt.err)
			if diff := cmp.Diff(tt.want, q.calls); diff != "" {
				t.Errorf("queue calls (-want +got):\n%s", diff)
			}
		})
	}
}
