package informers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestChildIndex(t *testing.T) {
	child := func(parentUID string) *Object { return &Object{parentUID: parentUID} }
	x := NewChildIndex()
	steps := []struct {
		name     string
		key      string
		old, cur *Object
		want     map[string][]string
	}{
		{"add", "ns/a", nil, child("p1"), map[string][]string{"p1": {"ns/a"}}},
		{"add a sibling", "ns/b", nil, child("p1"), map[string][]string{"p1": {"ns/a", "ns/b"}}},
		{"add again (resync)", "ns/a", nil, child("p1"), map[string][]string{"p1": {"ns/a", "ns/b"}}},
		{"update, same parent", "ns/a", child("p1"), child("p1"), map[string][]string{"p1": {"ns/a", "ns/b"}}},
		{"relabelled to another parent", "ns/b", child("p1"), child("p2"), map[string][]string{"p1": {"ns/a"}, "p2": {"ns/b"}}},
		{"label removed", "ns/a", child("p1"), child(""), map[string][]string{"p2": {"ns/b"}}},
		{"deleted", "ns/b", child("p2"), nil, map[string][]string{}},
		{"deleted, never indexed", "ns/c", child("p3"), nil, map[string][]string{}},
	}
	for _, s := range steps {
		x.Update(s.key, s.old, s.cur)
		got := map[string][]string{}
		for uid := range x.byParent {
			got[uid] = x.Keys(uid)
		}
		if diff := cmp.Diff(s.want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
			t.Fatalf("after %q (-want +got):\n%s", s.name, diff)
		}
	}
}
