package rollout

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOrder(t *testing.T) {
	var parents []Parent
	for i := range 40 {
		parents = append(parents, Parent{Namespace: fmt.Sprintf("ns%d", i%4), Name: fmt.Sprintf("p%02d", i), Canary: i%13 == 5})
	}
	want := slices.Clone(parents)
	Order(want, "rev1")

	t.Run("canaries first", func(t *testing.T) {
		var canaries []Parent
		for _, p := range parents {
			if p.Canary {
				canaries = append(canaries, p)
			}
		}
		for i, p := range want {
			if p.Canary != (i < len(canaries)) {
				t.Fatalf("parent %d of the order is %+v; want the %d canaries first:\n%v", i, p, len(canaries), want)
			}
		}
	})
	t.Run("independent of the input order", func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for range 20 {
			got := slices.Clone(parents)
			r.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
			Order(got, "rev1")
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("Order of shuffled parents (-want +got):\n%s", diff)
			}
		}
	})
	t.Run("deterministic across namespaces", func(t *testing.T) {
		// The hash spreads the first parents over the namespaces rather than taking one
		// namespace's first: the first eight hold at least three of the four namespaces.
		ns := map[string]bool{}
		for _, p := range want[3:11] {
			ns[p.Namespace] = true
		}
		if len(ns) < 3 {
			t.Errorf("the first non-canary parents take fewer than three namespaces: %v", want[3:11])
		}
	})
	t.Run("names that hash alike still order by namespace and name", func(t *testing.T) {
		got := []Parent{{Namespace: "b", Name: "x"}, {Namespace: "a", Name: "x"}, {Namespace: "a", Name: "x", Canary: true}}
		Order(got, "rev1")
		if !got[0].Canary {
			t.Errorf("Order = %v, want the canary first", got)
		}
	})
	t.Run("empty", func(t *testing.T) {
		Order(nil, "rev1")
	})
	t.Run("another revision, another order", func(t *testing.T) {
		// Nobody can name a parent so that it comes first in every rollout: the order
		// depends on the revision, which is not known before the rules change.
		other := slices.Clone(parents)
		Order(other, "rev2")
		if slices.Equal(other, want) {
			t.Errorf("the order of revision rev2 is that of rev1:\n%v", want)
		}
		firsts := map[string]bool{}
		for i := range 10 {
			got := slices.Clone(parents)
			Order(got, fmt.Sprintf("r%d", i))
			firsts[got[3].Name] = true // the first after the three canaries
		}
		if len(firsts) < 5 {
			t.Errorf("the first parent after the canaries over 10 revisions: %v, want at least 5 different", firsts)
		}
	})
}

func TestMembers(t *testing.T) {
	tests := []struct {
		steps    []float64
		taken, n int
		want     int
	}{
		{steps: []float64{1, 100}, taken: 1, n: 1, want: 1},
		{steps: []float64{1, 100}, taken: 1, n: 10, want: 1},
		{steps: []float64{1, 100}, taken: 1, n: 30, want: 1},
		{steps: []float64{1, 100}, taken: 1, n: 10000, want: 100},
		{steps: []float64{10, 100}, taken: 1, n: 30, want: 3},
		{steps: []float64{10, 100}, taken: 1, n: 31, want: 4},
		{steps: []float64{25, 50, 100}, taken: 2, n: 30, want: 15},
		{steps: []float64{10, 100}, taken: 2, n: 30, want: 30},
		{steps: []float64{100}, taken: 1, n: 7, want: 7},
		{steps: []float64{10, 50}, taken: 5, n: 30, want: 15},
		{steps: []float64{10, 100}, taken: 0, n: 30, want: 0},
		{steps: []float64{10, 100}, taken: 1, n: 0, want: 0},
		{steps: nil, taken: 1, n: 30, want: 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/%d/%d", tt.steps, tt.taken, tt.n), func(t *testing.T) {
			if got := Members(tt.steps, tt.taken, tt.n); got != tt.want {
				t.Errorf("Members(%v, %d, %d) = %d, want %d", tt.steps, tt.taken, tt.n, got, tt.want)
			}
		})
	}
}
