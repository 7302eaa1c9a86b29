package informers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubecel/kubecel/rules/contract"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestTrimObject(t *testing.T) {
	entry := func(manager string) map[string]any {
		return map[string]any{"manager": manager, "operation": "Apply", "apiVersion": "v1",
			"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:data": map[string]any{"f:a": map[string]any{}}}}
	}
	tests := []struct {
		name string
		in   map[string]any
		want map[string]any
	}{{
		name: "keeps kubecel's entry and drops the others and last-applied",
		in: map[string]any{"metadata": map[string]any{
			"name":          "a",
			"managedFields": []any{entry("kubectl"), entry(contract.FieldManager), entry("kube-controller-manager")},
			"annotations":   map[string]any{"kubectl.kubernetes.io/last-applied-configuration": "{}", "keep": "me"},
		}},
		want: map[string]any{"metadata": map[string]any{
			"name":          "a",
			"managedFields": []any{entry(contract.FieldManager)},
			"annotations":   map[string]any{"keep": "me"},
		}},
	}, {
		name: "no entry of ours: managedFields removed",
		in:   map[string]any{"metadata": map[string]any{"name": "b", "managedFields": []any{entry("kubectl")}}},
		want: map[string]any{"metadata": map[string]any{"name": "b"}},
	}, {
		name: "no metadata",
		in:   map[string]any{"kind": "X"},
		want: map[string]any{"kind": "X"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := &unstructured.Unstructured{Object: tt.in}
			Trim(got)
			if diff := cmp.Diff(tt.want, got.Object); diff != "" {
				t.Errorf("Trim (-want +got):\n%s", diff)
			}
		})
	}
}
