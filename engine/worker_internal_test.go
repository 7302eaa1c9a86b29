package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubecel/kubecel/rules"
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
		res  result
		err  error
		want []string
	}{
		{"done", result{}, nil, []string{"forget"}},
		{"done, look again later", result{requeueAfter: 5 * time.Second}, nil, []string{"forget", "after 5s"}},
		{"failed", result{}, failed, []string{"backoff"}},
		{"failed, retry at a fixed pace", result{requeueAfter: conflictRetry}, failed, []string{"after 30s"}},
		{"failed for good", result{}, terminal(failed), []string{"forget"}},
		{"failed for good, wrapped", result{}, fmt.Errorf("rule %q: %w", "r", terminal(failed)), []string{"forget"}},
		{"failed for good, delay ignored", result{requeueAfter: time.Second}, terminal(failed), []string{"forget"}},
		{"yielded with writes left", result{yield: true}, nil, []string{"forget", "add"}},
		{"a ref moved while it ran", result{again: true}, nil, []string{"forget", "add"}},
		{"a ref moved, but failed", result{again: true}, failed, []string{"backoff"}},
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

// TestVerdict: what a reconcile of a live parent returns for what went wrong in it.
func TestVerdict(t *testing.T) {
	evalErr := errors.New("no such key 'prot'")
	deadline := fmt.Errorf("evaluate: %w", context.DeadlineExceeded)
	conflict := &conflictError{rule: "r", child: "config", holder: "is not kubecel's"}
	applyErr := errors.New("apply: forbidden")
	tests := []struct {
		name     string
		out      outcome
		want     result
		fail     bool // an error is returned
		terminal bool // and no retry can help
	}{
		{name: "synced", out: outcome{}},
		{name: "evaluation error", out: outcome{evalErr: evalErr}, want: result{reason: rules.ReasonEvaluationFailed}, fail: true, terminal: true},
		{name: "evaluation deadline", out: outcome{evalErr: deadline}, want: result{reason: rules.ReasonEvaluationFailed}, fail: true},
		{name: "only conflicts", out: outcome{applyErr: []error{conflict}}, want: result{requeueAfter: conflictRetry, reason: rules.ReasonChildExists}, fail: true},
		{name: "conflict and apply error", out: outcome{applyErr: []error{conflict, applyErr}}, want: result{reason: rules.ReasonChildExists}, fail: true},
		{name: "evaluation and apply error", out: outcome{evalErr: evalErr, applyErr: []error{applyErr}}, want: result{reason: rules.ReasonEvaluationFailed}, fail: true},
		{name: "apply error", out: outcome{applyErr: []error{applyErr}}, want: result{reason: rules.ReasonApplyFailed}, fail: true},
		{name: "status write", out: outcome{statusErr: applyErr}, want: result{reason: reasonStatusFailed}, fail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.out.verdict()
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(result{})); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if (err != nil) != tt.fail {
				t.Errorf("error = %v, want an error: %t", err, tt.fail)
			}
			if isTerminal := errors.As(err, new(*terminalError)); isTerminal != tt.terminal {
				t.Errorf("error %v terminal: %t, want %t", err, isTerminal, tt.terminal)
			}
		})
	}
}
