package informers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/rules/contract"
)

func configMapAt(uid, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	u.SetNamespace("ns")
	u.SetName("c")
	u.SetUID(types.UID(uid))
	u.SetResourceVersion(rv)
	return u
}

// TestWrittenEcho plays writes and watch events of one key in the orders they can
// arrive in, and checks which events the handler would act on.
func TestWrittenEcho(t *testing.T) {
	type step struct {
		send   bool                       // announce a write (Sending)
		settle bool                       // the write returns (Settle) with response, nil if it failed
		resp   *unstructured.Unstructured // the response, for settle
		event  *unstructured.Unstructured // a watch event of the key
	}
	cases := []struct {
		name  string
		steps []step
		// handled lists, in order, the events the handler acts on: at once (Echo
		// false) or replayed when held back; by resource version.
		handled []string
		// remembered is whether a write is still remembered at the end.
		remembered bool
	}{
		{
			name:  "the echo after the response",
			steps: []step{{send: true}, {settle: true, resp: configMapAt("u1", "10")}, {event: configMapAt("u1", "10")}},
		},
		{
			name:  "the echo before the response",
			steps: []step{{send: true}, {event: configMapAt("u1", "10")}, {settle: true, resp: configMapAt("u1", "10")}},
		},
		{
			name:       "someone's write while ours is in flight",
			steps:      []step{{send: true}, {event: configMapAt("u1", "9")}, {settle: true, resp: configMapAt("u1", "10")}},
			handled:    []string{"9"},
			remembered: true,
		},
		{
			name:    "an event while a failed write was in flight",
			steps:   []step{{send: true}, {event: configMapAt("u1", "9")}, {settle: true}},
			handled: []string{"9"},
		},
		{
			name:    "nothing written",
			steps:   []step{{event: configMapAt("u1", "10")}},
			handled: []string{"10"},
		},
		{
			name:       "someone's write after ours",
			steps:      []step{{send: true}, {settle: true, resp: configMapAt("u1", "10")}, {event: configMapAt("u1", "11")}},
			handled:    []string{"11"},
			remembered: true,
		},
		{
			name:       "another object of the name",
			steps:      []step{{send: true}, {settle: true, resp: configMapAt("u1", "10")}, {event: configMapAt("u2", "10")}},
			handled:    []string{"10"},
			remembered: true,
		},
		{
			name: "two writes in flight",
			steps: []step{{send: true}, {send: true}, {event: configMapAt("u1", "10")}, {event: configMapAt("u1", "11")},
				{settle: true, resp: configMapAt("u1", "10")}, {settle: true, resp: configMapAt("u1", "11")}},
		},
		{
			name: "a held event outlives the first of two writes",
			steps: []step{{send: true}, {send: true}, {event: configMapAt("u1", "9")},
				{settle: true, resp: configMapAt("u1", "10")}, {settle: true, resp: configMapAt("u1", "11")}},
			handled:    []string{"9"},
			remembered: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWritten(acceptAll)
			var handled []string
			for _, s := range tc.steps {
				switch {
				case s.send:
					w.Sending("ns/c")
				case s.settle:
					w.Settle("ns/c", s.resp)
				default:
					rv := s.event.GetResourceVersion()
					if !w.Echo("ns/c", s.event, func() { handled = append(handled, rv) }) {
						handled = append(handled, rv)
					}
				}
			}
			if diff := cmp.Diff(tc.handled, handled); diff != "" {
				t.Errorf("events handled (-want +got):\n%s", diff)
			}
			if _, ok := w.objs["ns/c"]; ok != tc.remembered {
				t.Errorf("remembered at the end = %v, want %v", ok, tc.remembered)
			}
			if len(w.sending) != 0 || len(w.held) != 0 {
				t.Errorf("left behind: sending %v, held %v", w.sending, w.held)
			}
		})
	}
}

// TestWrittenNewerDecodes: a remembered response is read back as the cache would show
// it (trimmed), by key while the cache is older and by its parent, and is kept as plain
// JSON text.
func TestWrittenNewerDecodes(t *testing.T) {
	w := NewWritten(func(*unstructured.Unstructured) bool { return true })
	resp := configMapAt("u1", "10")
	resp.Object["data"] = map[string]any{"k": "v <&>"}
	resp.SetLabels(map[string]string{contract.LabelManagedBy: contract.ManagedByValue, contract.LabelParentUID: "p1"})
	resp.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "someone-else"}}
	want := resp.DeepCopy()
	delete(want.Object["metadata"].(map[string]any), "managedFields")

	w.Sending("ns/c")
	w.Settle("ns/c", resp)
	if !w.objs["ns/c"].plain {
		t.Error("the remembered response is compressed")
	}
	got := w.Newer("ns/c", configMapAt("u1", "9"))
	if got == nil {
		t.Fatal("Newer: nothing, want the response")
	}
	if diff := cmp.Diff(want.Object, got.Object); diff != "" {
		t.Errorf("Newer (-want +got):\n%s", diff)
	}
	children := w.Children("p1")
	if len(children) != 1 || !cmp.Equal(children[0].Object, want.Object) {
		t.Errorf("Children(p1) = %v, want the response", children)
	}
	if got := w.Newer("ns/c", configMapAt("u1", "10")); got != nil {
		t.Errorf("Newer with the cache caught up = %v, want nil", got.Object)
	}
}
