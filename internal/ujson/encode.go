// Package ujson encodes unstructured Kubernetes objects (maps of maps, as client-go's
// dynamic client holds them) to JSON: Marshal writes exactly the bytes
// encoding/json.Marshal writes for the same value, without reflection for the types a
// decoded object is made of. kubecel encodes the JSON text of every object its caches
// keep and of every child it hashes (rules.AppliedHash); encoding/json's reflection and
// sorting were a tenth of the controller's CPU while it converged.
package ujson

import (
	"encoding/json"
	"slices"
	"strconv"
)

// maxDepth is how deep Append nests before it leaves the rest to encoding/json, which
// reports a cycle past its own limit. Decoded objects never come near it.
const maxDepth = 500

// Marshal returns the JSON encoding of v: the bytes json.Marshal(v) returns, and its
// error when it has one.
func Marshal(v any) ([]byte, error) {
	return Append(make([]byte, 0, 512), v)
}

// Append appends the JSON encoding of v to dst, as Marshal. On error dst is returned as
// it was given.
func Append(dst []byte, v any) ([]byte, error) {
	out, err := appendValue(dst, v, 0)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// appendValue writes the types a JSON decode into `any` makes (with int64 for integers,
// as Kubernetes' decoders make them) itself, and hands every other type, and every
// string or float with a character or a form it does not write itself, to
// encoding/json. A nil map or slice is "null", as encoding/json writes it.
func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	if depth > maxDepth {
		return appendStd(dst, v)
	}
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return appendString(dst, v)
	case bool:
		return strconv.AppendBool(dst, v), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case float64:
		// encoding/json writes floats in one of two forms by their size; integral
		// values below 1e21 are digits only, which strconv writes the same.
		if v == float64(int64(v)) && v < 1e21 && v > -1e21 {
			return strconv.AppendFloat(dst, v, 'f', -1, 64), nil
		}
		return appendStd(dst, v)
	case map[string]any:
		return appendMap(dst, v, depth)
	case []any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	default:
		return appendStd(dst, v)
	}
}

// appendMap writes m's entries by key, sorted as encoding/json sorts them (byte-wise).
func appendMap(dst []byte, m map[string]any, depth int) ([]byte, error) {
	if m == nil {
		return append(dst, "null"...), nil
	}
	var small [16]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendString(dst, k); err != nil {
			return nil, err
		}
		dst = append(dst, ':')
		if dst, err = appendValue(dst, m[k], depth+1); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// plain marks the bytes a JSON string holds as they are: printable ASCII except the
// quote and backslash, and except <, > and &, which encoding/json escapes for HTML.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// appendString writes s quoted; a string with any other byte (a control character, a
// character escaped for HTML, or any non-ASCII byte, whose validity encoding/json checks)
// is written by encoding/json.
func appendString(dst []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if !plain[s[i]] {
			return appendStd(dst, s)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"'), nil
}

// appendStd appends encoding/json's encoding of v.
func appendStd(dst []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}
