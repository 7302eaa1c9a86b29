package informers

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestFewObjectsOfAKindHaveNoDictionary: a kind's first objects are compressed alone,
// and from its dictAfter-th object on against the kind's dictionary (about 35 KB each,
// more than a kind with a few objects saves); every one of them decodes to what was
// cached.
func TestFewObjectsOfAKindHaveNoDictionary(t *testing.T) {
	kind := fmt.Sprintf("Gadget%p", t) // a kind no other test caches
	var objects []*Object
	var want []map[string]any
	for i := range dictAfter + 2 {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.kubecel.dev/v1", "kind": kind,
			"metadata": map[string]any{"name": fmt.Sprint("g", i), "namespace": "ns", "uid": fmt.Sprint("uid-", i), "resourceVersion": "7"},
			"spec":     map[string]any{"size": int64(i), "image": "registry.example/gadget:1"},
		}}
		o, err := NewObject(u, nil)
		if err != nil {
			t.Fatal(err)
		}
		if withDict := o.dict != nil; withDict != (i >= dictAfter-1) {
			t.Errorf("object %d of the kind: compressed with a dictionary %v, want %v", i+1, withDict, i >= dictAfter-1)
		}
		objects = append(objects, o)
		want = append(want, u.Object)
	}
	for i, o := range objects {
		got, err := o.Decode()
		if err != nil {
			t.Fatalf("object %d: %v", i+1, err)
		}
		if diff := cmp.Diff(want[i], got.Object); diff != "" {
			t.Errorf("object %d decoded (-cached +decoded):\n%s", i+1, diff)
		}
	}
}
