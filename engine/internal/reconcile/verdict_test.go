package reconcile

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecel/kubecel/rules/contract"
)

// TestVerdict: what a reconcile of a live parent returns for what went wrong in it.
func TestVerdict(t *testing.T) {
	evalErr := errors.New("no such key 'prot'")
	deadline := fmt.Errorf("evaluate: %w", context.DeadlineExceeded)
	conflict := &conflictError{rule: "r", child: "config", holder: "is not kubecel's"}
	applyErr := errors.New("apply: forbidden")
	tests := []struct {
		name     string
		out      outcome
		want     Result
		fail     bool // an error is returned
		terminal bool // and no retry can help
	}{
		{name: "synced", out: outcome{}},
		{name: "evaluation error", out: outcome{evalErr: evalErr}, want: Result{Reason: contract.ReasonEvaluationFailed}, fail: true, terminal: true},
		{name: "evaluation deadline", out: outcome{evalErr: deadline}, want: Result{Reason: contract.ReasonEvaluationFailed}, fail: true},
		{name: "only conflicts", out: outcome{applyErr: []error{conflict}}, want: Result{RequeueAfter: conflictRetry, Reason: contract.ReasonChildExists}, fail: true},
		{name: "conflict and apply error", out: outcome{applyErr: []error{conflict, applyErr}}, want: Result{Reason: contract.ReasonChildExists}, fail: true},
		{name: "evaluation and apply error", out: outcome{evalErr: evalErr, applyErr: []error{applyErr}}, want: Result{Reason: contract.ReasonEvaluationFailed}, fail: true},
		{name: "apply error", out: outcome{applyErr: []error{applyErr}}, want: Result{Reason: contract.ReasonApplyFailed}, fail: true},
		{name: "status write", out: outcome{statusErr: applyErr}, want: Result{Reason: reasonStatusFailed}, fail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.out.verdict()
			if diff := cmp.Diff(tt.want, got); diff != "" {
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
