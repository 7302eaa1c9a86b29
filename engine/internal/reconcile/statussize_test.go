package reconcile

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

func TestFitStatus(t *testing.T) {
	r := &rules.Rule{Name: "web", ReadyCondition: contract.ConditionReady, SyncedCondition: contract.ConditionSynced}
	parent := func(spec int) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Web", "metadata": map[string]any{"name": "a"},
			"spec": map[string]any{"text": strings.Repeat("s", spec)},
		}}
	}
	status := func(fields map[string]int) map[string]any {
		s := map[string]any{"observedGeneration": int64(1), "conditions": []any{
			map[string]any{"type": contract.ConditionReady, "status": "True", "reason": contract.ReasonReady},
			map[string]any{"type": contract.ConditionSynced, "status": "True", "reason": contract.ReasonSynced},
		}}
		for name, n := range fields {
			s[name] = strings.Repeat("v", n)
		}
		return s
	}
	tests := []struct {
		name     string
		spec     int
		fields   map[string]int
		budget   int
		wantLeft []string
	}{
		{name: "small", spec: 10, fields: map[string]int{"a": 10}, budget: 1000},
		{name: "a big status on a small parent fits the budget", spec: 10, fields: map[string]int{"a": 70_000}, budget: 200_000},
		{name: "the largest field goes first", spec: 100_000, fields: map[string]int{"big": 90_000, "small": 10, "mid": 20_000}, budget: 150_000,
			wantLeft: []string{"status.big (90002 bytes)"}},
		{name: "as many as it takes", spec: 100_000, fields: map[string]int{"big": 90_000, "small": 10, "mid": 20_000}, budget: 100_500,
			wantLeft: []string{"status.big (90002 bytes)", "status.mid (20002 bytes)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := status(tt.fields)
			left := fitStatus(r, want, parent(tt.spec), tt.budget)
			if diff := cmp.Diff(tt.wantLeft, left); diff != "" {
				t.Errorf("left out (-want +got):\n%s", diff)
			}
			for name := range tt.fields {
				_, kept := want[name]
				if gone := strings.Contains(fmt.Sprint(left), "status."+name+" "); kept == gone {
					t.Errorf("field %s kept=%v, left out=%v", name, kept, gone)
				}
			}
			synced := want["conditions"].([]any)[1].(map[string]any)
			if tooLarge := synced["reason"] == contract.ReasonStatusTooLarge; tooLarge != (len(tt.wantLeft) > 0) {
				t.Errorf("Synced %v; want StatusTooLarge only when fields were left out", synced)
			}
			if len(tt.wantLeft) > 0 && (synced["status"] != "False" || !strings.Contains(synced["message"].(string), tt.wantLeft[0])) {
				t.Errorf("Synced %v; want False naming %s", synced, tt.wantLeft[0])
			}
		})
	}
}

func TestTooLarge(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{err: nil},
		{err: errors.New("etcdserver: request is too large"), want: true},
		{err: apierrors.NewInternalError(errors.New("rpc error: code = ResourceExhausted desc = trying to send message larger than max (2098464 vs. 2097152)")), want: true},
		{err: apierrors.NewRequestEntityTooLargeError("limit is 3145728"), want: true},
		{err: apierrors.NewConflict(schema.GroupResource{Resource: "webs"}, "a", errors.New("changed"))},
	}
	for _, tt := range tests {
		if got := tooLarge(tt.err); got != tt.want {
			t.Errorf("tooLarge(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
