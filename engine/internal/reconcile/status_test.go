package reconcile

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/rules"
)

func cond(typ, status string) map[string]any { return map[string]any{"type": typ, "status": status} }

// TestKeepOthersConditions: a rule that shares a parent's status sends the other
// conditions as they are, its own replaced, in type order, so that an atomic list is
// never left without another rule's conditions, and two rules send the same order.
func TestKeepOthersConditions(t *testing.T) {
	r := &rules.Rule{Name: "a", ReadyCondition: "a.kubecel.dev/Ready", SyncedCondition: "a.kubecel.dev/Synced"}
	parent := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		cond("b.kubecel.dev/Synced", "True"), cond("a.kubecel.dev/Ready", "False"), cond("Other", "True"), cond("b.kubecel.dev/Ready", "True"),
	}}}}
	want := map[string]any{"conditions": []any{cond("a.kubecel.dev/Ready", "True"), cond("a.kubecel.dev/Synced", "True")}}
	keepOthersConditions(want, parent, r)
	got := want["conditions"]
	if diff := cmp.Diff([]any{
		cond("Other", "True"), cond("a.kubecel.dev/Ready", "True"), cond("a.kubecel.dev/Synced", "True"),
		cond("b.kubecel.dev/Ready", "True"), cond("b.kubecel.dev/Synced", "True"),
	}, got); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
}

func TestConditionsHeld(t *testing.T) {
	tests := []struct {
		name       string
		want, live []any
		held       bool
	}{
		{"same", []any{cond("Ready", "True")}, []any{cond("Ready", "True")}, true},
		{"another order, others too", []any{cond("Ready", "True"), cond("Synced", "True")},
			[]any{cond("Synced", "True"), cond("Other", "False"), cond("Ready", "True")}, true},
		{"another status", []any{cond("Ready", "True")}, []any{cond("Ready", "False")}, false},
		{"missing", []any{cond("Ready", "True")}, []any{cond("Synced", "True")}, false},
		{"none live", []any{cond("Ready", "True")}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := conditionsHeld(tt.want, tt.live); got != tt.held {
				t.Errorf("conditionsHeld = %v, want %v", got, tt.held)
			}
		})
	}
}
