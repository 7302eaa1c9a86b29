package celjson

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/kubecel/kubecel/rules/internal/celbudget"
)

// This file converts CEL values into the plain JSON-like Go values of a manifest:
// map[string]any, []any, string, int64, float64, bool and nil.

// MaxDepth bounds the nesting of converted values.
const MaxDepth = 100

// ToJSON converts a CEL value, charging b with the size of the result: a
// value built by sharing (one list or string referred to many times) is as large as its
// copies.
func ToJSON(v ref.Val, b *celbudget.Budget) (any, error) {
	return toJSONDepth(v, b, 0)
}

// convertWhat names a value converted into a manifest in messages.
const convertWhat = "the value of this field"

func toJSONDepth(v ref.Val, b *celbudget.Budget, depth int) (any, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("value nested deeper than %d levels", MaxDepth)
	}
	switch x := v.(type) {
	case types.String:
		if err := b.Charge(int64(len(x)), convertWhat); err != nil {
			return nil, err
		}
		return string(x), nil
	case types.Int:
		return int64(x), nil
	case types.Uint:
		if x > math.MaxInt64 {
			return nil, fmt.Errorf("uint %d does not fit in an int64", uint64(x))
		}
		return int64(x), nil
	case types.Double:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%v is not a JSON number", f)
		}
		return f, nil
	case types.Bool:
		return bool(x), nil
	case types.Null:
		return nil, nil
	case types.Bytes:
		if err := b.Charge(int64(base64.StdEncoding.EncodedLen(len(x))), convertWhat); err != nil {
			return nil, err
		}
		return base64.StdEncoding.EncodeToString(x), nil
	case types.Timestamp:
		return x.UTC().Format(time.RFC3339Nano), nil
	case types.Duration:
		return x.Duration.String(), nil
	case *types.Err:
		return nil, x
	case *types.Optional:
		return nil, fmt.Errorf("an optional value cannot be stored; unwrap it with .orValue(default) or make it the whole field")
	}
	// Values that came from the parent or an observed child are Go JSON values already:
	// copy them without going through CEL. Anything else in them (CEL values inside a
	// concatenated list, say) fails the copy and takes the general path below.
	switch native := v.Value().(type) {
	case map[string]any, []any:
		mark := b.Mark()
		out, err := copyJSON(native, b, depth)
		if err == nil || b.Refused(err) {
			return out, err
		}
		b.Rewind(mark)
	}
	switch native := v.Value().(type) {
	case map[ref.Val]ref.Val:
		// A map literal built by the expression.
		if err := b.Charge(int64(len(native))*celbudget.EntryBytes, convertWhat); err != nil {
			return nil, err
		}
		out := make(map[string]any, len(native))
		for k, val := range native {
			key, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("map key %v is a %s; JSON object keys are strings", k, k.Type().TypeName())
			}
			if err := b.Charge(int64(len(key)), convertWhat); err != nil {
				return nil, err
			}
			c, err := toJSONDepth(val, b, depth+1)
			if err != nil {
				return nil, err
			}
			out[string(key)] = c
		}
		return out, nil
	case []ref.Val:
		// A list literal built by the expression.
		if err := b.Charge(int64(len(native))*celbudget.ElemBytes, convertWhat); err != nil {
			return nil, err
		}
		out := make([]any, len(native))
		for i, val := range native {
			c, err := toJSONDepth(val, b, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	switch x := v.(type) {
	case traits.Mapper:
		out := make(map[string]any)
		it := x.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			key, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("map key %v is a %s; JSON object keys are strings", k, k.Type().TypeName())
			}
			if err := b.Charge(celbudget.EntryBytes+int64(len(key)), convertWhat); err != nil {
				return nil, err
			}
			val, err := toJSONDepth(x.Get(k), b, depth+1)
			if err != nil {
				return nil, err
			}
			out[string(key)] = val
		}
		return out, nil
	case traits.Lister:
		n, _ := x.Size().(types.Int)
		if err := b.Charge(int64(n)*celbudget.ElemBytes, convertWhat); err != nil {
			return nil, err
		}
		out := make([]any, 0, int(n))
		it := x.Iterator()
		for it.HasNext() == types.True {
			val, err := toJSONDepth(it.Next(), b, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, val)
		}
		return out, nil
	}
	if s, ok := stringForm(v); ok {
		return s, nil
	}
	return nil, fmt.Errorf("a value of type %s cannot be stored in a manifest", v.Type().TypeName())
}

// CopyJSON deep-copies a Go JSON value, so that results never share maps or slices with
// the caller's inputs, charging b with its size.
func CopyJSON(v any, b *celbudget.Budget) (any, error) {
	return copyJSON(v, b, 0)
}

func copyJSON(v any, b *celbudget.Budget, depth int) (any, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("value nested deeper than %d levels", MaxDepth)
	}
	switch x := v.(type) {
	case map[string]any:
		if err := b.Charge(int64(len(x))*celbudget.EntryBytes, convertWhat); err != nil {
			return nil, err
		}
		out := make(map[string]any, len(x))
		for k, val := range x {
			if err := b.Charge(int64(len(k)), convertWhat); err != nil {
				return nil, err
			}
			c, err := copyJSON(val, b, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		if err := b.Charge(int64(len(x))*celbudget.ElemBytes, convertWhat); err != nil {
			return nil, err
		}
		out := make([]any, len(x))
		for i, val := range x {
			c, err := copyJSON(val, b, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%v is not a JSON number", x)
		}
		return x, nil
	case string:
		if err := b.Charge(int64(len(x)), convertWhat); err != nil {
			return nil, err
		}
		return x, nil
	case int64, bool, nil:
		return x, nil
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case float32:
		return float64(x), nil
	}
	return nil, fmt.Errorf("unsupported value of Go type %T", v)
}

// ToText formats a value interpolated into a string.
func ToText(v ref.Val) (string, error) {
	switch x := v.(type) {
	case types.String:
		return string(x), nil
	case types.Int:
		return strconv.FormatInt(int64(x), 10), nil
	case types.Uint:
		return strconv.FormatUint(uint64(x), 10), nil
	case types.Double:
		return strconv.FormatFloat(float64(x), 'g', -1, 64), nil
	case types.Bool:
		return strconv.FormatBool(bool(x)), nil
	case *types.Err:
		return "", x
	case types.Null, *types.Optional, traits.Lister, traits.Mapper:
		return "", fmt.Errorf("cannot interpolate %s into a string; convert it first (string(), join(), .orValue())", v.Type().TypeName())
	}
	if s, ok := stringForm(v); ok {
		return s, nil
	}
	return "", fmt.Errorf("cannot interpolate a value of type %s into a string", v.Type().TypeName())
}

// stringForm renders values of the Kubernetes libraries (quantity, URL, IP, CIDR,
// semver) and other opaque values as strings: through CEL's string() conversion where
// they support it, else through their Go value's String method.
func stringForm(v ref.Val) (string, bool) {
	if s, ok := v.ConvertToType(types.StringType).(types.String); ok {
		return string(s), true
	}
	if s, ok := v.Value().(fmt.Stringer); ok {
		return s.String(), true
	}
	return "", false
}
