package engine

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSubset(t *testing.T) {
	tests := []struct {
		name       string
		want, have any
		ok         bool
	}{
		{"equal scalars", "a", "a", true},
		{"different scalars", "a", "b", false},
		{"int and float of one number", int64(3), float64(3), true},
		{"extra keys in have", map[string]any{"a": "1"}, map[string]any{"a": "1", "b": "2"}, true},
		{"missing key", map[string]any{"a": "1"}, map[string]any{"b": "2"}, false},
		{"nil wanted value may be absent", map[string]any{"a": nil}, map[string]any{}, true},
		{"list items defaulted by the server", []any{map[string]any{"port": int64(80)}}, []any{map[string]any{"port": int64(80), "protocol": "TCP"}}, true},
		{"list of another length", []any{"a"}, []any{"a", "b"}, false},
		{"empty map wanted, nothing there", map[string]any{}, nil, true},
		{"map wanted, scalar there", map[string]any{"a": "1"}, "x", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := subset(tt.want, tt.have); got != tt.ok {
				t.Errorf("subset(%v, %v) = %v, want %v", tt.want, tt.have, got, tt.ok)
			}
		})
	}
}

// managed returns a live object whose kubecel apply entry owns fieldsJSON.
func managed(obj map[string]any, fieldsJSON string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: obj}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{
		Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(fieldsJSON),
	}})
	return u
}

func TestNeedsApply(t *testing.T) {
	service := func(extra map[string]any) map[string]any {
		spec := map[string]any{"ports": []any{map[string]any{"port": int64(80), "protocol": "TCP"}}}
		for k, v := range extra {
			spec[k] = v
		}
		return map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s"}, "spec": spec}
	}
	desired := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s"},
		"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}},
	}}
	ownsPorts := `{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{}}}}}`
	ownsPortsAndType := `{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{}}},"f:type":{}}}`
	tests := []struct {
		name string
		live *unstructured.Unstructured
		want bool
	}{
		{"missing object", nil, true},
		{"converged; key field defaulted by the server", managed(service(nil), ownsPorts), false},
		{"a field we own is no longer desired", managed(service(map[string]any{"type": "NodePort"}), ownsPortsAndType), true},
		{"a value changed by someone else", managed(map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s"},
			"spec": map[string]any{"ports": []any{map[string]any{"port": int64(81), "protocol": "TCP"}}}}, ownsPorts), true},
		{"not ours yet", &unstructured.Unstructured{Object: service(nil)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := needsApply(desired, tt.live); got != tt.want {
				t.Errorf("needsApply = %v, want %v", got, tt.want)
			}
		})
	}
}
