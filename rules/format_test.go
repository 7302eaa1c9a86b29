package rules

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kubecel/kubecel/rules/internal/format"
)

// TestFormatTypes checks that Load reads every field of the types of package format,
// which the JSON Schema is generated from, as the type the schema gives it: a value of
// another JSON type is an error at that field.
func TestFormatTypes(t *testing.T) {
	// A rule with one of each block, which loads.
	base := func() map[string]any {
		return map[string]any{
			"apiVersion": format.APIVersion, "kind": format.Kind,
			"rules": []any{map[string]any{
				"name":   "r",
				"parent": map[string]any{"apiVersion": "v1", "resource": "configmaps"},
				"refs": []any{map[string]any{
					"id": "ref", "apiVersion": "v1", "kind": "ConfigMap", "name": "x",
				}},
				"children": []any{map[string]any{
					"id": "c", "template": map[string]any{
						"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"},
					},
					"lifecycle": map[string]any{},
				}},
				"status":  map[string]any{"fields": map[string]any{"a": "b"}},
				"rollout": map[string]any{"steps": []any{"100%"}},
			}},
		}
	}
	if _, err := Load(encode(t, base()), Options{}); err != nil {
		t.Fatalf("the base rules do not load: %v", err)
	}
	// block finds, in a fresh base, the block of type typ and the path of its fields.
	block := func(doc map[string]any, typ reflect.Type) (map[string]any, string) {
		rule := doc["rules"].([]any)[0].(map[string]any)
		switch typ {
		case reflect.TypeFor[format.RuleSet]():
			return doc, ""
		case reflect.TypeFor[format.Rule]():
			return rule, ""
		case reflect.TypeFor[format.Parent]():
			return rule["parent"].(map[string]any), "parent."
		case reflect.TypeFor[format.Ref]():
			return rule["refs"].([]any)[0].(map[string]any), ""
		case reflect.TypeFor[format.Child]():
			return rule["children"].([]any)[0].(map[string]any), ""
		case reflect.TypeFor[format.Lifecycle]():
			child := rule["children"].([]any)[0].(map[string]any)
			return child["lifecycle"].(map[string]any), "lifecycle."
		case reflect.TypeFor[format.Status]():
			return rule["status"].(map[string]any), "status."
		case reflect.TypeFor[format.Rollout]():
			return rule["rollout"].(map[string]any), "rollout."
		}
		t.Fatalf("no block of type %v", typ)
		return nil, ""
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[format.RuleSet](), reflect.TypeFor[format.Rule](), reflect.TypeFor[format.Parent](),
		reflect.TypeFor[format.Ref](), reflect.TypeFor[format.Child](), reflect.TypeFor[format.Lifecycle](),
		reflect.TypeFor[format.Status](), reflect.TypeFor[format.Rollout](),
	} {
		for i := range typ.NumField() {
			f := typ.Field(i)
			key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			// A value of another JSON type than the field's, and what Load says of it.
			var wrong any = "text"
			want := map[reflect.Kind]string{
				reflect.String: "must be a string", reflect.Bool: "must be true or false",
				reflect.Int: "must be a positive integer", reflect.Slice: "must be a list",
				reflect.Map: "must be a map", reflect.Pointer: "must be a map",
			}[f.Type.Kind()]
			if f.Type.Kind() == reflect.String {
				wrong = int64(7)
			}
			t.Run(typ.Name()+"."+key, func(t *testing.T) {
				doc := base()
				m, prefix := block(doc, typ)
				m[key] = wrong
				_, err := Load(encode(t, doc), Options{})
				var list ErrorList
				if !errors.As(err, &list) {
					t.Fatalf("%s: %v loads (%v)", key, wrong, err)
				}
				for _, e := range list {
					at := e.Field == prefix+key || (typ == reflect.TypeFor[format.RuleSet]() && strings.HasSuffix(e.path, key))
					if at && strings.Contains(e.Message, want) {
						return
					}
				}
				t.Errorf("%s: %v: no error %q at the field: %v", key, wrong, want, err)
			})
		}
	}
}

func encode(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
