package rollout

import (
	"cmp"
	"hash/fnv"
	"math"
	"slices"
)

// Parent is what Order reads of a parent. Canary is what the rule's policy says of it
// (rules.Rollout.IsCanary): nothing a parent carries makes it one.
type Parent struct {
	Namespace, Name string
	Canary          bool
}

// Order ranks a rule's parents for the rollout of revision: canaries first, then by a
// hash of the revision, namespace and name (so that the first steps take parents across
// namespaces, and nobody can name a parent so that it comes first in every rollout: the
// revision is not known before the rules change), then by namespace and name. It
// depends on nothing but the parents and the revision, so every replica that sees the
// same parents ranks them the same. parents is sorted in place.
func Order(parents []Parent, revision string) {
	type ranked struct {
		p Parent
		h uint64
	}
	rs := make([]ranked, len(parents))
	for i, p := range parents {
		f := fnv.New64a()
		f.Write([]byte(revision + "/" + p.Namespace + "/" + p.Name))
		rs[i] = ranked{p, mix(f.Sum64())}
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		if a.p.Canary != b.p.Canary {
			if a.p.Canary {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.h, b.h), cmp.Compare(a.p.Namespace, b.p.Namespace), cmp.Compare(a.p.Name, b.p.Name))
	})
	for i := range rs {
		parents[i] = rs[i].p
	}
}

// mix spreads every bit of an FNV-1a hash over all of its bits (MurmurHash3's 64-bit
// finalizer). FNV-1a alone barely carries its last bytes into its high bits, so sorting
// by it ranks parents by namespace first, and a first step would take one namespace.
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// Members is how many of n parents the first `taken` of steps hold: the percent of the
// last step taken, rounded up, so that a first step of 1% holds at least one parent.
func Members(steps []float64, taken, n int) int {
	if taken <= 0 || n == 0 || len(steps) == 0 {
		return 0
	}
	if taken > len(steps) {
		taken = len(steps)
	}
	// The small epsilon keeps 10% of 30 at 3, not 4 by a rounding error.
	m := int(math.Ceil(steps[taken-1]*float64(n)/100 - 1e-9))
	return min(max(m, 1), n)
}
