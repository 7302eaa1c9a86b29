package apischema

import (
	"context"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionscel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// This file finds, in a stored object, the values a change is about, and tells whether
// the new schema refuses them.

// step is one step of a path in an object: a field, every item of a list, or every
// value of a map.
type step struct {
	key           string
	items, values bool
}

type steps []step

func (s steps) key(k string) steps { return append(s[:len(s):len(s)], step{key: k}) }
func (s steps) items() steps       { return append(s[:len(s):len(s)], step{items: true}) }
func (s steps) values() steps      { return append(s[:len(s):len(s)], step{values: true}) }

// parent splits off the last step when it is a field.
func (s steps) parent() (steps, string) {
	if len(s) == 0 || s[len(s)-1].key == "" {
		return nil, ""
	}
	return s[:len(s)-1], s[len(s)-1].key
}

func (s steps) String() string {
	var b strings.Builder
	for _, st := range s {
		switch {
		case st.items, st.values:
			b.WriteString("[*]")
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(st.key)
		}
	}
	return b.String()
}

// find returns every value the path reaches in obj.
func (s steps) find(obj map[string]any) []any {
	found := []any{obj}
	for _, st := range s {
		var next []any
		for _, v := range found {
			switch x := v.(type) {
			case map[string]any:
				switch {
				case st.values:
					for _, item := range x {
						next = append(next, item)
					}
				case !st.items:
					if item, ok := x[st.key]; ok {
						next = append(next, item)
					}
				}
			case []any:
				if st.items {
					next = append(next, x...)
				}
			}
		}
		found = next
	}
	return found
}

// present reports whether the path reaches a value in obj.
func (s steps) present(obj map[string]any) bool { return len(s.find(obj)) > 0 }

// any reports whether a value the path reaches satisfies pred.
func (s steps) any(obj map[string]any, pred func(any) bool) bool {
	for _, v := range s.find(obj) {
		if v != nil && pred(v) {
			return true
		}
	}
	return false
}

// lacks reports whether an object the path reaches lacks the field name.
func (s steps) lacks(obj map[string]any, name string) bool {
	for _, v := range s.find(obj) {
		if m, ok := v.(map[string]any); ok {
			if _, has := m[name]; !has {
				return true
			}
		}
	}
	return false
}

// isType reports whether a JSON value is of an OpenAPI type.
func isType(v any, typ string) bool {
	switch v.(type) {
	case string:
		return typ == "string"
	case bool:
		return typ == "boolean"
	case int64, int:
		return typ == "integer" || typ == "number"
	case float64:
		return typ == "number"
	case []any:
		return typ == "array"
	case map[string]any:
		return typ == "object"
	}
	return false
}

// fits reports whether a value passes the checks of schema s (its rules aside), as the
// API server checks it: types, enum, bounds, lengths, pattern, list types.
func fits(s *apiextensionsv1.JSONSchemaProps, v any) bool {
	bare := s.DeepCopy()
	bare.XValidations, bare.Default = nil, nil
	in, err := internal(bare)
	if err != nil {
		return false
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(in)
	if err != nil {
		return false
	}
	if len(apiservervalidation.ValidateCustomResource(nil, v, validator)) > 0 {
		return false
	}
	wrapped := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"v": *bare}}
	st, err := structural(wrapped)
	if err != nil {
		return false
	}
	return len(listtype.ValidateListSetsAndMaps(nil, st, map[string]any{"v": v})) == 0
}

// passes reports whether a value passes one CEL rule of schema s.
func passes(s *apiextensionsv1.JSONSchemaProps, rule apiextensionsv1.ValidationRule, v any) bool {
	only := s.DeepCopy()
	only.XValidations = apiextensionsv1.ValidationRules{rule}
	st, err := structural(only)
	if err != nil {
		return false
	}
	errs, _ := apiextensionscel.NewValidator(st, false, celconfig.PerCallLimit).Validate(context.Background(), field.NewPath("v"), st, v, nil, celconfig.RuntimeCELCostBudget)
	return len(errs) == 0
}
