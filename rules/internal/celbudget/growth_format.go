package celbudget

import (
	"strconv"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// The sizer of format (growth.go): an upper bound of the text a format call builds,
// from its format string and arguments.

// sizeFormat: format(args) builds the format string with each clause replaced by its
// argument. The size of a clause's text is bounded from the argument: a string's
// length, a number's longest form, a list or map formatted element by element (each
// element counting at least ElemBytes).
func sizeFormat(args argv, room int64) int64 {
	f, ok1 := args.v[0].(types.String)
	list, ok2 := args.v[1].(traits.Lister)
	if !ok1 || !ok2 {
		return 0
	}
	s := string(f)
	var total int64
	next := int64(0)
	for i := 0; i < len(s) && total <= room; i++ {
		if s[i] != '%' {
			total++
			continue
		}
		if i+1 < len(s) && s[i+1] == '%' {
			total++
			i++
			continue
		}
		// A clause: %[.precision]verb.
		j := i + 1
		precision := int64(0)
		if j < len(s) && s[j] == '.' {
			k := j + 1
			for k < len(s) && s[k] >= '0' && s[k] <= '9' {
				k++
			}
			p, err := strconv.ParseInt(s[j+1:k], 10, 64)
			if err != nil {
				return total // format fails on it by itself
			}
			precision, j = p, k
		}
		if j >= len(s) || next >= listSize(list) {
			return total
		}
		total += clauseSize(s[j], precision, list.Get(types.Int(next)), room-total)
		next++
		i = j
	}
	return total
}

// maxNumberText is the longest text of a number: a double in fixed notation has up to
// 309 digits before the point.
const maxNumberText = 330

// clauseSize bounds the text of one format clause.
func clauseSize(verb byte, precision int64, arg ref.Val, room int64) int64 {
	switch verb {
	case 's':
		return textSize(arg, room)
	case 'f', 'e':
		return precision + maxNumberText
	case 'x', 'X':
		switch v := arg.(type) {
		case types.String:
			return 2 * int64(len(v))
		case types.Bytes:
			return 2 * int64(len(v))
		}
		return maxNumberText
	case 'd', 'b', 'o':
		return maxNumberText
	}
	return 0
}

// textSize bounds the text format's %s gives a value, stopping past room.
func textSize(v ref.Val, room int64) int64 {
	switch x := v.(type) {
	case types.String:
		return int64(len(x))
	case types.Bytes:
		return int64(len(x))
	case traits.Lister:
		// An element counts at least ElemBytes (its ", " and what visiting it costs),
		// so that a list of many small elements is not walked far past room.
		total := int64(2)
		it := x.Iterator()
		for it.HasNext() == types.True && total <= room {
			total += ElemBytes + textSize(it.Next(), room-total)
		}
		return total
	case traits.Mapper:
		total := int64(2)
		it := x.Iterator()
		for it.HasNext() == types.True && total <= room {
			k := it.Next()
			total += EntryBytes + textSize(k, room-total)
			if val, found := x.Find(k); found {
				total += textSize(val, room-total)
			}
		}
		return total
	case types.Null:
		return 4
	}
	return maxNumberText
}
