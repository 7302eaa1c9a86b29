package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMovedParents: each handover completes once its own parents have been reconciled,
// also when ring changes come faster than handovers complete; a parent that moved away
// again holds up no handover; one with no parents completes at once.
func TestMovedParents(t *testing.T) {
	a, b, c := key("ns", "a"), key("ns", "b"), key("ns", "c")
	all := func(queueKey) bool { return true }
	tests := []struct {
		name  string
		steps func(m *movedParents, done func(string) func())
		want  []string
	}{
		{
			name: "one handover",
			steps: func(m *movedParents, done func(string) func()) {
				m.start([]queueKey{a, b}, done("first"), all)
				m.reconciled(a)
				m.reconciled(b)
			},
			want: []string{"first"},
		},
		{
			name: "none to wait for",
			steps: func(m *movedParents, done func(string) func()) {
				m.start(nil, done("empty"), all)
			},
			want: []string{"empty"},
		},
		{
			name: "a second change before the first completes",
			steps: func(m *movedParents, done func(string) func()) {
				m.start([]queueKey{a, b}, done("first"), all)
				m.start([]queueKey{c}, done("second"), all)
				m.reconciled(a)
				m.reconciled(c)
				m.reconciled(b)
			},
			want: []string{"second", "first"},
		},
		{
			name: "a parent moved away again",
			steps: func(m *movedParents, done func(string) func()) {
				m.start([]queueKey{a, b}, done("first"), all)
				m.reconciled(a)
				m.start([]queueKey{c}, done("second"), func(k queueKey) bool { return k != b })
				m.reconciled(c)
			},
			want: []string{"first", "second"},
		},
		{
			name: "a parent in both",
			steps: func(m *movedParents, done func(string) func()) {
				m.start([]queueKey{a}, done("first"), all)
				m.start([]queueKey{a, c}, done("second"), all)
				m.reconciled(a)
				m.reconciled(c)
			},
			want: []string{"first", "second"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m movedParents
			var got []string
			tt.steps(&m, func(name string) func() { return func() { got = append(got, name) } })
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("handovers completed (-want +got):\n%s", diff)
			}
			if len(m.pending) != 0 {
				t.Errorf("%d handovers still pending", len(m.pending))
			}
		})
	}
}
