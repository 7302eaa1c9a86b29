package celbudget

import (
	"encoding/base64"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// The sizers of the growth functions (growth.go): each computes, from a call's
// arguments and without building anything, how many bytes the call will build.

// sizeAdd: the concatenation of two strings, two byte sequences or two lists. A list
// built up by a comprehension (map, filter) grows in place, by the elements added.
func sizeAdd(args argv, _ int64) int64 {
	if args.n != 2 {
		return 0
	}
	switch l := args.v[0].(type) {
	case types.String:
		if r, ok := args.v[1].(types.String); ok {
			return int64(len(l)) + int64(len(r))
		}
	case types.Bytes:
		if r, ok := args.v[1].(types.Bytes); ok {
			return int64(len(l)) + int64(len(r))
		}
	case traits.Lister:
		r, ok := args.v[1].(traits.Lister)
		if !ok {
			return 0
		}
		n := listSize(r)
		if _, inPlace := l.(traits.MutableLister); !inPlace {
			n += listSize(l)
		}
		return n * ElemBytes
	}
	return 0
}

// sizeReplace: replace(old, new[, n]) builds the string with every (or the first n)
// occurrences of old replaced; an empty old matches before every character and at the
// end. A string with nothing to replace is returned as it is.
func sizeReplace(args argv, _ int64) int64 {
	if args.n < 3 {
		return 0
	}
	s, ok1 := args.v[0].(types.String)
	old, ok2 := args.v[1].(types.String)
	repl, ok3 := args.v[2].(types.String)
	if !ok1 || !ok2 || !ok3 {
		return 0
	}
	var count int64
	if old == "" {
		count = int64(utf8.RuneCountInString(string(s))) + 1
	} else {
		count = int64(strings.Count(string(s), string(old)))
	}
	if args.n == 4 {
		if n, ok := args.v[3].(types.Int); ok && n >= 0 && int64(n) < count {
			count = int64(n)
		}
	}
	if count == 0 {
		return 0
	}
	return int64(len(s)) + count*(int64(len(repl))-int64(len(old)))
}

// sizeSplit: split(sep[, n]) builds a list of substrings, which share the string's
// bytes; an empty separator splits every character.
func sizeSplit(args argv, _ int64) int64 {
	if args.n < 2 {
		return 0
	}
	s, ok1 := args.v[0].(types.String)
	sep, ok2 := args.v[1].(types.String)
	if !ok1 || !ok2 {
		return 0
	}
	var count int64
	if sep == "" {
		count = int64(utf8.RuneCountInString(string(s)))
	} else {
		count = int64(strings.Count(string(s), string(sep))) + 1
	}
	if args.n == 3 {
		if n, ok := args.v[2].(types.Int); ok && n >= 0 && int64(n) < count {
			count = int64(n)
		}
	}
	return count * ElemBytes
}

// sizeJoin: join([sep]) builds one string of the list's strings with sep between them.
func sizeJoin(args argv, room int64) int64 {
	list, ok := args.v[0].(traits.Lister)
	if !ok {
		return 0
	}
	var sep int64
	if args.n == 2 {
		if s, ok := args.v[1].(types.String); ok {
			sep = int64(len(s))
		}
	}
	n := listSize(list)
	var total int64
	for i := int64(0); i < n && total <= room; i++ {
		if i > 0 {
			total += sep
		}
		if s, ok := list.Get(types.Int(i)).(types.String); ok {
			total += int64(len(s))
		}
	}
	return total
}

// sizeTarget: functions whose result is at most as large as their first argument (a
// string, bytes or a list): case changes, reversal, substrings, conversions, sorting.
func sizeTarget(args argv, _ int64) int64 {
	if args.n == 0 {
		return 0
	}
	switch v := args.v[0].(type) {
	case types.String:
		return int64(len(v))
	case types.Bytes:
		return int64(len(v))
	case traits.Lister:
		return listSize(v) * ElemBytes
	}
	return 0
}

// sizeSlice: slice(start, end) builds a list of end-start elements.
func sizeSlice(args argv, _ int64) int64 {
	if args.n != 3 {
		return 0
	}
	list, ok1 := args.v[0].(traits.Lister)
	start, ok2 := args.v[1].(types.Int)
	end, ok3 := args.v[2].(types.Int)
	if !ok1 || !ok2 || !ok3 || start < 0 || end < start || int64(end) > listSize(list) {
		return 0
	}
	return int64(end-start) * ElemBytes
}

// sizeFlatten: flatten([depth]) builds a list of the elements of the nested lists down
// to depth (1 by default). Nested lists may be one list shared many times, so they are
// counted as they are visited, and counting stops past room.
func sizeFlatten(args argv, room int64) int64 {
	list, ok := args.v[0].(traits.Lister)
	if !ok {
		return 0
	}
	depth := int64(1)
	if args.n == 2 {
		d, ok := args.v[1].(types.Int)
		if !ok || d < 0 {
			return 0
		}
		depth = int64(d)
	}
	var total int64
	var visit func(l traits.Lister, depth int64)
	visit = func(l traits.Lister, depth int64) {
		n := listSize(l)
		for i := int64(0); i < n && total <= room; i++ {
			// Each element visited counts, so that nested empty lists count too.
			total += ElemBytes
			if nested, ok := l.Get(types.Int(i)).(traits.Lister); ok && depth > 0 {
				visit(nested, depth-1)
			}
		}
	}
	visit(list, depth)
	return total
}

// sizeRange: lists.range(n) builds a list of n integers.
func sizeRange(args argv, _ int64) int64 {
	if n, ok := args.v[0].(types.Int); ok && n > 0 {
		return int64(n) * ElemBytes
	}
	return 0
}

// sizeMapInsert: cel.@mapInsert, how comprehensions (transformMap) build maps: one entry,
// or a map's entries, into the accumulator, in place unless it is a map of its own.
func sizeMapInsert(args argv, _ int64) int64 {
	m, ok := args.v[0].(traits.Mapper)
	if !ok {
		return 0
	}
	added := int64(1)
	if args.n == 2 {
		other, ok := args.v[1].(traits.Mapper)
		if !ok {
			return 0
		}
		added = mapSize(other)
	}
	if _, inPlace := m.(traits.MutableMapper); !inPlace {
		added += mapSize(m)
	}
	return added * EntryBytes
}

// sizeQuote: strings.quote wraps the string in quotes, escapes quotes, backslashes
// and control characters with a backslash, and replaces each invalid byte with U+FFFD.
func sizeQuote(args argv, _ int64) int64 {
	s, ok := args.v[0].(types.String)
	if !ok {
		return 0
	}
	n := int64(2)
	for _, r := range string(s) {
		switch r {
		case '\a', '\b', '\f', '\n', '\r', '\t', '\v', '\\', '"':
			n += 2
		default:
			n += int64(utf8.RuneLen(r))
		}
	}
	return n
}

func sizeBase64Encode(args argv, _ int64) int64 {
	if b, ok := args.v[0].(types.Bytes); ok {
		return int64(base64.StdEncoding.EncodedLen(len(b)))
	}
	return 0
}

func sizeBase64Decode(args argv, _ int64) int64 {
	if s, ok := args.v[0].(types.String); ok {
		return int64(base64.StdEncoding.DecodedLen(len(s)))
	}
	return 0
}

// matchBytes is what findAll allocates for a match: its string's header, and the
// regexp engine's indices of the match.
const matchBytes = 64

// findAllWith is findAll (the Kubernetes regex library's: every match, or the first n)
// with the pattern re, or the pattern argument compiled at each call when re is nil. It
// asks the regexp engine for one match more than the budget can hold, so that it never
// builds a longer list, and refuses when it gets it.
func findAllWith(re *regexp.Regexp) runner {
	return func(args argv, vars interpreter.Activation, m Memory) ref.Val {
		if args.n < 2 || args.n > 3 {
			return types.NoSuchOverloadErr()
		}
		str, ok := args.v[0].Value().(string)
		if !ok {
			return types.MaybeNoSuchOverloadErr(args.v[0])
		}
		pattern, ok := args.v[1].Value().(string)
		if !ok {
			return types.MaybeNoSuchOverloadErr(args.v[1])
		}
		n := int64(-1)
		if args.n == 3 {
			if n, ok = args.v[2].Value().(int64); !ok {
				return types.MaybeNoSuchOverloadErr(args.v[2])
			}
		}
		if re == nil {
			var err error
			if re, err = regexp.Compile(pattern); err != nil {
				return types.NewErr("Illegal regex: %v", err.Error())
			}
		}
		fits := m.room(vars) / matchBytes
		limit := n
		if n < 0 || n > fits {
			limit = fits + 1
		}
		found := re.FindAllString(str, int(limit))
		if err := m.chargeIn(vars, int64(len(found))*matchBytes, "findAll()"); err != nil {
			return types.WrapErr(err)
		}
		return types.NewStringList(types.DefaultTypeAdapter, found)
	}
}

// argv holds the argument values of a call, at most four (what replace(old, new, n)
// takes). It is passed by value, so that a call does not allocate a slice for them.
type argv struct {
	n int
	v [4]ref.Val
}

// argvOf copies args into an argv.
func argvOf(args []ref.Val) argv {
	var a argv
	a.n = copy(a.v[:], args)
	return a
}

// listSize is a list's length.
func listSize(l traits.Lister) int64 {
	n, _ := l.Size().(types.Int)
	return int64(n)
}

// mapSize is a map's number of entries.
func mapSize(m traits.Mapper) int64 {
	n, _ := m.Size().(types.Int)
	return int64(n)
}
