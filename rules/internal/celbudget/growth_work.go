package celbudget

import (
	"unicode/utf8"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/traits"
)

// The work of the functions whose work grows as the product of their inputs' sizes
// (growth.go), in CEL's cost units, computed from a call's arguments before it runs.

// workDistinct: distinct compares each element with those kept before it: n²/2
// comparisons (CEL's lists library counts 2n² from its version 3).
func workDistinct(args argv) uint64 {
	if l, ok := args.v[0].(traits.Lister); ok {
		n := uint64(listSize(l))
		return n * n / 2
	}
	return 0
}

// workProduct: the sets functions look each element of one list up in the other,
// factor times.
func workProduct(factor uint64) func(argv) uint64 {
	return func(args argv) uint64 {
		a, ok1 := args.v[0].(traits.Lister)
		b, ok2 := args.v[1].(traits.Lister)
		if !ok1 || !ok2 {
			return 0
		}
		return factor * uint64(listSize(a)) * uint64(listSize(b))
	}
}

// workSearch: indexOf and lastIndexOf on strings compare the substring at each position,
// character by character: size(s) x size(sub) comparisons at worst, counted a hundredth
// of a unit each (most stop at the first character), so that a call within the default
// cost limit compares at most 10^8 characters, about a tenth of a second.
func workSearch(args argv) uint64 {
	s, ok1 := args.v[0].(types.String)
	sub, ok2 := args.v[1].(types.String)
	if !ok1 || !ok2 {
		return 0
	}
	return uint64(utf8.RuneCountInString(string(s))) * uint64(utf8.RuneCountInString(string(sub))) / 100
}
