package shard

import (
	"fmt"
	"testing"

	"github.com/kubecel/kubecel/rules/contract"
)

func TestSet(t *testing.T) {
	var a, b Set
	for _, x := range []int{0, 1, 2, 3, 7, 64, 255} {
		a.Add(x)
	}
	for _, x := range []int{2, 3, 64, 100} {
		b.Add(x)
	}
	tests := []struct {
		name string
		got  Set
		want string
	}{
		{"a", a, "0-3,7,64,255"},
		{"a minus b", a.Minus(b), "0-1,7,255"},
		{"a and b", a.And(b), "2-3,64"},
		{"all", All(), "0-255"},
		{"none", Set{}, ""},
	}
	for _, tt := range tests {
		if got := tt.got.String(); got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, got, tt.want)
		}
	}
	if a.Len() != 7 || All().Len() != contract.Buckets || a.Has(4) || !a.Has(255) || a.Has(256) || a.Has(-1) {
		t.Errorf("Len or Has is wrong for %v", a)
	}
}

// TestRingPartitions checks that every bucket has exactly one owner, that the shares
// are even enough, and that members agree on the version whatever order they list in.
func TestRingPartitions(t *testing.T) {
	for n := 1; n <= 8; n++ {
		var ids []string
		for i := range n {
			ids = append(ids, fmt.Sprintf("kubecel-%d_%08x", i, i*7919))
		}
		r := NewRing(ids...)
		var union Set
		total := 0
		for _, id := range r {
			owned := r.Owned(id)
			if overlap := union.And(owned); overlap.Len() != 0 {
				t.Fatalf("n=%d: buckets %v owned twice", n, overlap)
			}
			for _, b := range owned.List() {
				union.Add(b)
			}
			total += owned.Len()
			// Bounded loads: no share above the fair share rounded up (the busiest
			// replica sets the pace), none far below it.
			if owned.Len() < contract.Buckets/n*9/10 || owned.Len() > (contract.Buckets+n-1)/n {
				t.Errorf("n=%d: %s owns %d buckets, the fair share is %d", n, id, owned.Len(), contract.Buckets/n)
			}
		}
		if total != contract.Buckets || union != All() {
			t.Errorf("n=%d: %d buckets owned, want every one of %d", n, total, contract.Buckets)
		}
		reversed := make([]string, len(ids))
		for i, id := range ids {
			reversed[len(ids)-1-i] = id
		}
		if NewRing(reversed...).Version() != r.Version() {
			t.Errorf("n=%d: the version depends on the order of the members", n)
		}
	}
}

// TestRingMovesLittle checks that a member joining or leaving moves little more than
// its own share of the buckets.
func TestRingMovesLittle(t *testing.T) {
	ids := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("kubecel-%d_%08x", i, i*104729))
		}
		return out
	}
	for n := 1; n <= 7; n++ {
		before, after := NewRing(ids(n)...).Assign(), NewRing(ids(n+1)...).Assign()
		moved := 0
		for b := range contract.Buckets {
			if before[b] != after[b] {
				moved++
			}
		}
		// The joining member takes its share, 256/(n+1); allow as much again for
		// the buckets that bounded loads shift between the others.
		if share := contract.Buckets / (n + 1); moved > 2*share+2 {
			t.Errorf("%d to %d members: %d buckets moved, the new member's share is %d", n, n+1, moved, share)
		}
		t.Logf("%d to %d members: %d buckets moved (share %d)", n, n+1, moved, contract.Buckets/(n+1))
	}
	if NewRing("a", "b").Version() == NewRing("a", "b", "c").Version() {
		t.Error("two memberships have one version")
	}
}
