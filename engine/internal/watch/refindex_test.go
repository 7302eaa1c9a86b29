package watch

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/rules"
)

// TestRefIndexReaders sets and replaces what parents read, on both sides of the size at
// which a set of readers becomes a map, and checks who an event of the object queues.
func TestRefIndexReaders(t *testing.T) {
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	read := func(name string) []rules.Lookup {
		return []rules.Lookup{{GVK: cm, Namespace: "ns", Name: name}}
	}
	obj := func(name string) *informers.Object {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace("ns")
		u.SetName(name)
		o, err := informers.NewObject(u, trustLabels)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	readers := func(x *refIndex, name string) []string {
		var out []string
		for _, k := range x.readers(cm.GroupKind(), nil, obj(name)) {
			out = append(out, k.Name)
		}
		slices.Sort(out)
		return out
	}
	for _, n := range []int{2, fewParents, fewParents + 1, 3 * fewParents} {
		t.Run(fmt.Sprint(n, " readers"), func(t *testing.T) {
			var x refIndex
			var want []string
			for i := range n {
				p := Key{Rule: "r", Namespace: "ns", Name: fmt.Sprintf("p%02d", i)}
				x.set(p, read("shared"))
				x.set(p, read("shared")) // a second evaluation reads the same
				want = append(want, p.Name)
			}
			if diff := cmp.Diff(want, readers(&x, "shared")); diff != "" {
				t.Fatalf("readers (-want +got):\n%s", diff)
			}
			// The first parent now reads another object, the last one is gone.
			x.set(Key{Rule: "r", Namespace: "ns", Name: "p00"}, read("own"))
			x.drop(Key{Rule: "r", Namespace: "ns", Name: want[n-1]})
			if diff := cmp.Diff([]string{"p00"}, readers(&x, "own")); diff != "" {
				t.Errorf("readers of own (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want[1:n-1], readers(&x, "shared"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("readers of shared after the changes (-want +got):\n%s", diff)
			}
			for _, p := range want {
				x.drop(Key{Rule: "r", Namespace: "ns", Name: p})
			}
			if len(x.byName) != 0 || len(x.reads) != 0 {
				t.Errorf("after every parent is dropped the index holds %d objects and %d parents", len(x.byName), len(x.reads))
			}
		})
	}
}

// trustLabels takes every object's labels for proven.
func trustLabels(*unstructured.Unstructured) bool { return true }
