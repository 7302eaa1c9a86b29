package informers

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"
)

// recorder is a handler that writes down what it is told, as "add a", "update a",
// "delete a".
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) note(verb string, obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			u, _ = d.Obj.(*unstructured.Unstructured)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, verb+" "+u.GetName())
}

func (r *recorder) OnAdd(obj any, initial bool) {
	if initial {
		r.note("first-list add", obj)
		return
	}
	r.note("add", obj)
}

func (r *recorder) OnUpdate(_, obj any) { r.note("update", obj) }
func (r *recorder) OnDelete(obj any) {
	if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		r.note("relist delete", obj)
		return
	}
	r.note("delete", obj)
}
func (r *recorder) seen() []string            { r.mu.Lock(); defer r.mu.Unlock(); return slices.Clone(r.events) }
func (r *recorder) has(events ...string) bool { return slices.Equal(r.seen(), events) }
func configMap(name, value string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "ns"},
		"data":     map[string]any{"v": value},
	}}
}

// TestInformerHandlers checks the fan-out of Informer: a handler registered before the
// start sees the first list, one added later is given the cache first, every handler
// sees later events in order, and a removed handler sees nothing more.
func TestInformerHandlers(t *testing.T) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "ConfigMapList"}, configMap("a", "1"))
	inf := newInformer(client, Key{GVR: gvr}, 0, nil)
	early := &recorder{}
	if _, err := inf.AddEventHandler(early); err != nil {
		t.Fatal(err)
	}
	go inf.Run(t.Context())
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited 30s for %s; early handler saw %v", what, early.seen())
			}
		}
	}
	wait("the first list", func() bool { return inf.HasSynced() && early.has("first-list add a") })

	res := client.Resource(gvr).Namespace("ns")
	if _, err := res.Create(t.Context(), configMap("b", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("b's add", func() bool { return early.has("first-list add a", "add b") })

	late := &recorder{}
	reg, err := inf.AddEventHandler(late)
	if err != nil {
		t.Fatal(err)
	}
	if !reg.HasSynced() {
		t.Error("a handler added after the informer synced has not synced")
	}
	got := late.seen()
	slices.Sort(got) // the store lists in no order
	if diff := cmp.Diff([]string{"add a", "add b"}, got); diff != "" {
		t.Errorf("the late handler was given (-want +got):\n%s", diff)
	}

	if _, err := res.Update(t.Context(), configMap("a", "2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("a's update", func() bool { return slices.Contains(late.seen(), "update a") })
	if err := inf.RemoveEventHandler(reg); err != nil {
		t.Fatal(err)
	}
	if err := res.Delete(t.Context(), "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("b's delete", func() bool { return early.has("first-list add a", "add b", "update a", "delete b") })
	if got := late.seen(); slices.Contains(got, "delete b") {
		t.Errorf("a removed handler was told %v", got)
	}
	if got := len(late.seen()); got != 3 {
		t.Errorf("the late handler saw %v, want the two adds and one update", late.seen())
	}
}

// TestReflectedStore checks what the reflector's store tells the handlers of each
// change: the first list as first-list adds, a relist as updates and adds and, for
// what it no longer has, deletes of an unknown final state; and that the cache is what
// the changes made it, each object through the transform.
func TestReflectedStore(t *testing.T) {
	inf := &Informer{store: cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc)}
	transformed := 0
	inf.reflects = &reflected{inf: inf, transform: func(obj any) (any, error) {
		transformed++
		return obj, nil
	}}
	h := &recorder{}
	if _, err := inf.AddEventHandler(h); err != nil {
		t.Fatal(err)
	}
	r := inf.reflects
	steps := []struct {
		name string
		do   func() error
	}{
		{"first list", func() error { return r.Replace([]any{configMap("a", "1"), configMap("b", "1")}, "1") }},
		{"add", func() error { return r.Add(configMap("c", "1")) }},
		{"update", func() error { return r.Update(configMap("a", "2")) }},
		{"delete", func() error { return r.Delete(configMap("c", "1")) }},
		{"relist", func() error { return r.Replace([]any{configMap("a", "3"), configMap("d", "1")}, "2") }},
		{"resync", r.Resync},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if s.name == "first list" && !inf.HasSynced() {
			t.Error("not synced after the first list")
		}
	}
	want := []string{
		"first-list add a", "first-list add b",
		"add c", "update a", "delete c",
		"update a", "add d", "relist delete b",
		"update a", "update d",
	}
	got := h.seen()
	slices.Sort(got[len(got)-2:]) // a resync goes through the cache in no order
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ns/a", "ns/d"}, slices.Sorted(slices.Values(inf.store.ListKeys()))); diff != "" {
		t.Errorf("cached keys (-want +got):\n%s", diff)
	}
	if cached, _, _ := inf.store.GetByKey("ns/a"); cached.(*unstructured.Unstructured).Object["data"].(map[string]any)["v"] != "3" {
		t.Errorf("ns/a cached as %v, want the relisted version", cached)
	}
	if transformed != 7 {
		t.Errorf("%d objects went through the transform, want the 7 the reflector gave", transformed)
	}
}
