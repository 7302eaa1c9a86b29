package reconcile

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/engine/plan"
)

func TestNewChangeSkipsInvisibleWrites(t *testing.T) {
	live := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "a", "resourceVersion": "1"}, "data": map[string]any{"a": "1"}}}
	got := live.DeepCopy()
	got.SetResourceVersion("2")
	tests := []struct {
		name       string
		action     plan.Action
		live, got  *unstructured.Unstructured
		wantChange bool
	}{
		{"update that only takes ownership", plan.ActionUpdate, live, got, false},
		{"create", plan.ActionCreate, nil, got, true},
		{"prune", plan.ActionPrune, live, nil, true},
		{"status without a visible change", plan.ActionStatus, live, got, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, ok := newChange(tt.action, "c", tt.live, tt.got)
			if ok != tt.wantChange {
				t.Errorf("newChange(%s) = %v, want %v (%s)", tt.action, ok, tt.wantChange, ch.Text())
			}
			if ch.Object.Name != "a" || ch.Object.Kind != "ConfigMap" {
				t.Errorf("object = %+v, want ConfigMap a", ch.Object)
			}
		})
	}
}
