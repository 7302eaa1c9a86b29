package celjson

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// This file presents the JSON-like objects that Evaluate receives (the parent, observed
// children) to CEL. It differs from CEL's own adapter in one way that matters to a
// controller: a map iterates in key order. With Go's random map order, an expression
// such as `m.transformList(k, v, ...)` would produce a list in a different order on every
// evaluation, and the controller would rewrite the child on every resync.

// Adapter turns Go JSON values into CEL values lazily: containers are wrapped, not
// copied, and their elements are adapted when read.
type Adapter struct{}

// NativeToValue implements types.Adapter.
func (Adapter) NativeToValue(v any) ref.Val {
	switch x := v.(type) {
	case map[string]any:
		return Map(x)
	case []any:
		return types.NewDynamicList(Adapter{}, x)
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// Value adapts a Go JSON value.
func Value(v any) ref.Val {
	return Adapter{}.NativeToValue(v)
}

// Map is a JSON object as a CEL map with string keys.
type Map map[string]any

var _ traits.Mapper = Map(nil)

// Find implements traits.Mapper.
func (m Map) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	v, found := m[string(k)]
	if !found {
		return nil, false
	}
	return Value(v), true
}

// Get implements traits.Indexer.
func (m Map) Get(key ref.Val) ref.Val {
	if v, found := m.Find(key); found {
		return v
	}
	return types.NewErr("no such key: %v", key)
}

// Contains implements traits.Container.
func (m Map) Contains(key ref.Val) ref.Val {
	_, found := m.Find(key)
	return types.Bool(found)
}

// Size implements traits.Sizer.
func (m Map) Size() ref.Val { return types.Int(len(m)) }

// Iterator implements traits.Iterable: the keys in sorted order.
func (m Map) Iterator() traits.Iterator {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return &keyIterator{keys: keys}
}

// Equal implements ref.Val: equal sizes, and every key maps to an equal value.
func (m Map) Equal(other ref.Val) ref.Val {
	o, ok := other.(traits.Mapper)
	if !ok || o.Size() != types.Int(len(m)) {
		return types.False
	}
	for k, v := range m {
		ov, found := o.Find(types.String(k))
		if !found || Value(v).Equal(ov) != types.True {
			return types.False
		}
	}
	return types.True
}

// ConvertToNative implements ref.Val.
func (m Map) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return types.NewStringInterfaceMap(Adapter{}, m).ConvertToNative(typeDesc)
}

// ConvertToType implements ref.Val.
func (m Map) ConvertToType(typeValue ref.Type) ref.Val {
	switch typeValue {
	case types.MapType:
		return m
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from map to '%s'", typeValue)
}

// Type implements ref.Val.
func (m Map) Type() ref.Type { return types.MapType }

// Value implements ref.Val.
func (m Map) Value() any { return map[string]any(m) }

// keyIterator iterates over a map's sorted keys.
type keyIterator struct {
	keys []string
	next int
}

var _ traits.Iterator = (*keyIterator)(nil)

func (it *keyIterator) HasNext() ref.Val { return types.Bool(it.next < len(it.keys)) }

func (it *keyIterator) Next() ref.Val {
	if it.next >= len(it.keys) {
		return nil
	}
	k := it.keys[it.next]
	it.next++
	return types.String(k)
}

// The ref.Val methods of an iterator are never used as values.

func (it *keyIterator) ConvertToNative(reflect.Type) (any, error) {
	return nil, fmt.Errorf("an iterator has no native value")
}

func (it *keyIterator) ConvertToType(ref.Type) ref.Val {
	return types.NewErr("an iterator cannot be converted")
}

func (it *keyIterator) Equal(ref.Val) ref.Val { return types.False }

func (it *keyIterator) Type() ref.Type { return types.IteratorType }

func (it *keyIterator) Value() any { return nil }
