package watch

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper is a REST mapper that counts its lookups and resets.
type countingMapper struct {
	*meta.DefaultRESTMapper
	lookups, resets int
}

func (m *countingMapper) KindFor(gvr schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	m.lookups++
	return m.DefaultRESTMapper.KindFor(gvr)
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.lookups++
	return m.DefaultRESTMapper.RESTMapping(gk, versions...)
}

func (m *countingMapper) Reset() { m.resets++ }

// TestKindsRemembersAnswersUntilReset: a kind is looked up once until a reset; a
// failed lookup is asked again; an answer given before a reset is not kept after it.
func TestKindsRemembersAnswersUntilReset(t *testing.T) {
	widgets := schema.GroupVersionResource{Group: "example.dev", Version: "v1", Resource: "widgets"}
	widget := widgets.GroupVersion().WithKind("Widget")
	gadgets := widgets.GroupVersion().WithResource("gadgets")
	m := &countingMapper{DefaultRESTMapper: meta.NewDefaultRESTMapper(nil)}
	m.Add(widget, meta.RESTScopeNamespace)
	k := newKinds(m)

	want := Kind{GVK: widget, GVR: widgets, Namespaced: true}
	for i := range 3 {
		got, err := k.forResource(widgets)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("lookup %d (-want +got):\n%s", i, diff)
		}
	}
	if got, err := k.forKind(widget); err != nil || got != want {
		t.Fatalf("forKind = %v, %v; want %v", got, err, want)
	}
	if m.lookups != 2 {
		t.Errorf("three lookups of the resource and one of its kind asked the mapper %d times, want 2", m.lookups)
	}

	for range 2 {
		if _, err := k.forResource(gadgets); err == nil {
			t.Fatal("an unknown resource was found")
		}
	}
	if m.lookups != 4 {
		t.Errorf("two failed lookups: the mapper was asked %d times in all, want 4", m.lookups)
	}

	k.reset()
	if _, err := k.forResource(widgets); err != nil {
		t.Fatal(err)
	}
	if m.resets != 1 || m.lookups != 6 {
		t.Errorf("after a reset: %d mapper resets, %d lookups in all; want 1 and 6", m.resets, m.lookups)
	}

	// An answer the mapper gave before a reset that came while it was being kept.
	gen := k.gen
	k.reset()
	k.keep(gen, func() { k.byGVR[gadgets] = want })
	if _, ok := k.byGVR[gadgets]; ok {
		t.Error("an answer from before a reset was kept after it")
	}
}
