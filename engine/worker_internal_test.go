package engine

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecel/kubecel/engine/internal/reconcile"
	"k8s.io/client-go/util/workqueue"
)

// callQueue records the calls requeue makes; any other call panics (nil interface).
type callQueue struct {
	workqueue.TypedRateLimitingInterface[queueKey]
	calls []string
}

func (q *callQueue) Forget(queueKey)         { q.calls = append(q.calls, "forget") }
func (q *callQueue) Add(queueKey)            { q.calls = append(q.calls, "add") }
func (q *callQueue) AddRateLimited(queueKey) { q.calls = append(q.calls, "backoff") }
func (q *callQueue) AddAfter(_ queueKey, d time.Duration) {
	q.calls = append(q.calls, "after "+d.String())
}

// TestRequeue: the worker's one decision, from a reconcile's result and error, to
// forget the key, retry it with backoff, or look at it again after a delay.
func TestRequeue(t *testing.T) {
	failed := errors.New("apply failed")
	tests := []struct {
		name string
		res  reconcile.Result
		err  error
		want []string
	}{
		{"done", reconcile.Result{}, nil, []string{"forget"}},
		{"done, look again later", reconcile.Result{RequeueAfter: 5 * time.Second}, nil, []string{"forget", "after 5s"}},
		{"failed", reconcile.Result{}, failed, []string{"backoff"}},
		{"failed, retry at a fixed pace", reconcile.Result{RequeueAfter: 30 * time.Second}, failed, []string{"after 30s"}},
		{"failed for good", reconcile.Result{}, reconcile.Terminal(failed), []string{"forget"}},
		{"failed for good, wrapped", reconcile.Result{}, fmt.Errorf("rule %q: %w", "r", reconcile.Terminal(failed)), []string{"forget"}},
		{"failed for good, delay ignored", reconcile.Result{RequeueAfter: time.Second}, reconcile.Terminal(failed), []string{"forget"}},
		{"yielded with writes left", reconcile.Result{Yield: true}, nil, []string{"forget", "add"}},
		{"a ref moved while it ran", reconcile.Result{Again: true}, nil, []string{"forget", "add"}},
		{"a ref moved, but failed", reconcile.Result{Again: true}, failed, []string{"backoff"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &callQueue{}
			requeue(q, queueKey{Rule: "r", Namespace: "ns", Name: "p"}, tt.res, tt.err)
			if diff := cmp.Diff(tt.want, q.calls); diff != "" {
				t.Errorf("queue calls (-want +got):\n%s", diff)
			}
		})
	}
}
