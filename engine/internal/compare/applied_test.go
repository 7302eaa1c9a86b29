package compare

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
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
			if got := Subset(tt.want, tt.have); got != tt.ok {
				t.Errorf("Subset(%v, %v) = %v, want %v", tt.want, tt.have, got, tt.ok)
			}
		})
	}
}

// managed returns a live object whose kubecel apply entry owns fieldsJSON.
func managed(obj map[string]any, fieldsJSON string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: obj}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{
		Manager: contract.FieldManager, Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1",
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
	desiredService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s"},
		"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}},
	}}
	ownsPorts := `{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{}}}}}`
	ownsPortsAndType := `{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{}}},"f:type":{}}}`

	// A quota as kubecel applies it (hard: cpu "0.5", memory 1024Mi) and as the server
	// stores it (500m, 1Gi), with the hash of what was applied.
	desiredQuota := hashed(t, quota("0.5", "1024Mi", ""))
	applied := appliedHash(desiredQuota)
	ownsQuota := `{"f:metadata":{"f:annotations":{"f:kubecel.dev/applied-hash":{}}},"f:spec":{"f:hard":{"f:cpu":{},"f:memory":{}}}}`
	ownsMemory := `{"f:metadata":{"f:annotations":{"f:kubecel.dev/applied-hash":{}}},"f:spec":{"f:hard":{"f:memory":{}}}}`
	ownsQuotaAndPods := `{"f:metadata":{"f:annotations":{"f:kubecel.dev/applied-hash":{}}},"f:spec":{"f:hard":{"f:cpu":{},"f:memory":{},"f:pods":{}}}}`
	otherHash := appliedHash(hashed(t, quota("1", "1024Mi", "")))
	// A quota whose values the server keeps as they are.
	desiredPlain := hashed(t, quota("500m", "1Gi", ""))
	plain := appliedHash(desiredPlain)

	tests := []struct {
		name          string
		desired, live *unstructured.Unstructured
		want          bool
	}{
		{"missing object", desiredService, nil, true},
		{"converged; key field defaulted by the server", desiredService, managed(service(nil), ownsPorts), false},
		{"a field we own is no longer desired", desiredService, managed(service(map[string]any{"type": "NodePort"}), ownsPortsAndType), true},
		{"a value changed by someone else", desiredService, managed(map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s"},
			"spec": map[string]any{"ports": []any{map[string]any{"port": int64(81), "protocol": "TCP"}}}}, ownsPorts), true},
		{"not ours yet", desiredService, &unstructured.Unstructured{Object: service(nil)}, true},

		{"normalised values, applied as desired, all fields still ours", desiredQuota, managed(quota("500m", "1Gi", applied), ownsQuota), false},
		{"normalised values, applied by a kubecel without the hash", desiredQuota, managed(quota("500m", "1Gi", ""), ownsQuota), true},
		{"normalised values, another object applied last", desiredQuota, managed(quota("500m", "1Gi", otherHash), ownsQuota), true},
		{"normalised value changed by someone else, who now owns it", desiredQuota, managed(quota("2", "1Gi", applied), ownsMemory), true},
		{"normalised value removed by someone else", desiredQuota, managed(quota("", "1Gi", applied), ownsMemory), true},
		{"field taken by someone else who wrote our value", desiredPlain, managed(quota("500m", "1Gi", plain), ownsMemory), false},
		{"equal text, another object applied last: no write for the hash alone", desiredPlain, managed(quota("500m", "1Gi", otherHash), ownsQuota), false},
		{"equal text, a field we own no longer desired", desiredPlain, managed(quota("500m", "1Gi", otherHash), ownsQuotaAndPods), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NeedsApply(tt.desired, tt.live); got != tt.want {
				t.Errorf("NeedsApply = %v, want %v", got, tt.want)
			}
		})
	}
}

// quota returns a ResourceQuota with the given hard cpu and memory (when set), and the
// applied hash annotation when hash is set.
func quota(cpu, memory, hash string) map[string]any {
	md := map[string]any{"name": "q", "namespace": "ns"}
	if hash != "" {
		md["annotations"] = map[string]any{contract.AnnotationAppliedHash: hash}
	}
	hard := map[string]any{}
	for k, v := range map[string]string{"cpu": cpu, "memory": memory} {
		if v != "" {
			hard[k] = v
		}
	}
	return map[string]any{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": md, "spec": map[string]any{"hard": hard}}
}

// hashed returns obj as the rules' Shape ends it: with its applied hash.
func hashed(t *testing.T, obj map[string]any) *unstructured.Unstructured {
	t.Helper()
	hash, err := rules.AppliedHash(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	if err := unstructured.SetNestedField(u.Object, hash, "metadata", "annotations", contract.AnnotationAppliedHash); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestOwnsAll(t *testing.T) {
	service := func(spec map[string]any) map[string]any {
		obj := map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s", "namespace": "ns"}}
		if spec != nil {
			obj["spec"] = spec
		}
		return obj
	}
	port := func(n int64) map[string]any { return map[string]any{"name": "http", "port": n} }
	tests := []struct {
		name   string
		fields string
		obj    map[string]any
		want   bool
	}{
		{"identity is not listed", `{}`, service(nil), true},
		{"scalar", `{"f:spec":{"f:type":{}}}`, service(map[string]any{"type": "ClusterIP"}), true},
		{"scalar not ours", `{"f:spec":{"f:type":{}}}`, service(map[string]any{"clusterIP": ""}), false},
		{"map by its members", `{"f:metadata":{"f:labels":{"f:a":{},"f:b":{}}}}`,
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "1", "b": "2"}}}, true},
		{"map member not ours", `{"f:metadata":{"f:labels":{"f:a":{}}}}`,
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "1", "b": "2"}}}, false},
		{"atomic map", `{"f:spec":{"f:selector":{}}}`, service(map[string]any{"selector": map[string]any{"app": "a"}}), true},
		{"empty map", `{"f:spec":{"f:volumes":{"k:{\"name\":\"v\"}":{".":{},"f:emptyDir":{},"f:name":{}}}}}`,
			map[string]any{"spec": map[string]any{"volumes": []any{map[string]any{"name": "v", "emptyDir": map[string]any{}}}}}, true},
		{"keyed item, key field defaulted by the server", `{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{}}}}}`,
			service(map[string]any{"ports": []any{port(80)}}), true},
		{"keyed items", `{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{}},"k:{\"port\":81,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{}}}}}`,
			service(map[string]any{"ports": []any{port(81), port(80)}}), true},
		{"keyed item not ours", `{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{}}}}}`,
			service(map[string]any{"ports": []any{port(80), port(81)}}), false},
		{"keyed item, a field not ours", `{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{}}}}}`,
			service(map[string]any{"ports": []any{port(80)}}), false},
		{"set", `{"f:metadata":{"f:finalizers":{"v:\"a\"":{},"v:\"b\"":{}}}}`,
			map[string]any{"metadata": map[string]any{"finalizers": []any{"a", "b"}}}, true},
		{"set item not ours", `{"f:metadata":{"f:finalizers":{"v:\"a\"":{}}}}`,
			map[string]any{"metadata": map[string]any{"finalizers": []any{"a", "b"}}}, false},
		{"atomic list", `{"f:spec":{"f:args":{}}}`, map[string]any{"spec": map[string]any{"args": []any{"-v", "2"}}}, true},
		{"null not ours", `{}`, map[string]any{"spec": map[string]any{"type": nil}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			owned, ok := OwnedFields(managed(map[string]any{}, tt.fields), contract.FieldManager, "")
			if !ok {
				t.Fatalf("managedFields %s do not parse", tt.fields)
			}
			if got := ownsAll(owned, tt.obj); got != tt.want {
				t.Errorf("ownsAll = %v, want %v", got, tt.want)
			}
		})
	}
}
