package shard

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/kubecel/kubecel/rules/contract"
)

// Set is a set of buckets (0 to contract.Buckets-1).
type Set [contract.Buckets / 64]uint64

// All is the set of every bucket.
func All() Set {
	var s Set
	for i := range s {
		s[i] = ^uint64(0)
	}
	return s
}

func (s Set) Has(b int) bool { return b >= 0 && b < contract.Buckets && s[b/64]&(1<<(b%64)) != 0 }

func (s *Set) Add(b int) { s[b/64] |= 1 << (b % 64) }

// Len is the number of buckets in s.
func (s Set) Len() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// Minus is the buckets of s that are not in o.
func (s Set) Minus(o Set) Set {
	for i := range s {
		s[i] &^= o[i]
	}
	return s
}

// And is the buckets in both s and o.
func (s Set) And(o Set) Set {
	for i := range s {
		s[i] &= o[i]
	}
	return s
}

// Or is the buckets in s or o.
func (s Set) Or(o Set) Set {
	for i := range s {
		s[i] |= o[i]
	}
	return s
}

// List is the buckets of s in increasing order.
func (s Set) List() []int {
	out := make([]int, 0, s.Len())
	for b := range contract.Buckets {
		if s.Has(b) {
			out = append(out, b)
		}
	}
	return out
}

// String lists the buckets as ranges: "0-3,7".
func (s Set) String() string {
	var parts []string
	list := s.List()
	for i := 0; i < len(list); {
		j := i
		for j+1 < len(list) && list[j+1] == list[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(list[i]))
		} else {
			parts = append(parts, strconv.Itoa(list[i])+"-"+strconv.Itoa(list[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// Ring is the live members of a ring, by identity, sorted.
type Ring []string

// NewRing sorts the identities and drops duplicates.
func NewRing(identities ...string) Ring {
	r := slices.Clone(identities)
	slices.Sort(r)
	return slices.Compact(r)
}

// Version names the ring's membership: every replica that sees the same members
// computes the same version. It is what members acknowledge in their Leases.
func (r Ring) Version() string {
	h := sha256.New()
	for _, id := range r {
		h.Write([]byte(id))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
}

// Assign gives every bucket to one member: rendezvous (highest weight) hashing with
// bounded loads. Buckets are placed in order, each with the member of the highest
// weight for it that holds fewer than its fair share (the bucket count divided by the
// member count, rounded up). Every member computes the same assignment from the same
// membership; shares differ by one bucket at most; and a member joining or leaving
// moves few buckets besides its own share (see TestRingMovesLittle).
func (r Ring) Assign() [contract.Buckets]string {
	var out [contract.Buckets]string
	if len(r) == 0 {
		return out
	}
	capacity := (contract.Buckets + len(r) - 1) / len(r)
	load := make(map[string]int, len(r))
	order := make([]string, len(r))
	for b := range contract.Buckets {
		copy(order, r)
		slices.SortFunc(order, func(x, y string) int { return cmp.Compare(weight(y, b), weight(x, b)) })
		for _, id := range order {
			if load[id] < capacity {
				out[b] = id
				load[id]++
				break
			}
		}
	}
	return out
}

// Owned is the set of buckets that id owns in the ring.
func (r Ring) Owned(id string) Set {
	var s Set
	for b, owner := range r.Assign() {
		if owner == id {
			s.Add(b)
		}
	}
	return s
}

func weight(id string, b int) uint64 {
	sum := sha256.Sum256([]byte(id + "\x00" + strconv.Itoa(b)))
	return binary.BigEndian.Uint64(sum[:8])
}
