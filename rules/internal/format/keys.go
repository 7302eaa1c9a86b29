package format

import (
	"reflect"
	"strings"
)

// Keys returns the field names a block of type T may hold, in the order of T's fields.
func Keys[T any]() []string {
	t := reflect.TypeFor[T]()
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		keys = append(keys, name)
	}
	return keys
}
