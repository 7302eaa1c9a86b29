package kindschema

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"

	"github.com/kubecel/kubecel/rules/internal/celenv"
)

// LiteralMismatch explains why a literal value of a template cannot fill the schema
// field at p (the API server would reject it), or returns "" when it can or when the
// field's type is unknown. A quoted number where an integer is wanted, `port: "80"`, is
// the common case.
func (p Place) LiteralMismatch(v any) string {
	s := p.Schema
	if s == nil || v == nil || (s.Type == "" && !s.XIntOrString) {
		return ""
	}
	var ok bool
	want := Article(s.Type)
	switch {
	case s.XIntOrString:
		switch v.(type) {
		case string, int64:
			ok = true
		}
		want = "an integer or a string"
	case s.Type == "string":
		_, ok = v.(string)
	case s.Type == "integer":
		_, ok = v.(int64)
	case s.Type == "number":
		switch v.(type) {
		case int64, float64:
			ok = true
		}
	case s.Type == "boolean":
		_, ok = v.(bool)
	case s.Type == "object":
		_, ok = v.(map[string]any)
	case s.Type == "array":
		_, ok = v.([]any)
	default:
		ok = true
	}
	if ok {
		return ""
	}
	msg := fmt.Sprintf("%s %s is %s, but the template gives %s", p.Kind, p.At, want, describeLiteral(v))
	return msg + literalFix(v, s.Type)
}

// describeLiteral names a literal and its type: `the string "80"`, `the number 80`.
func describeLiteral(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", x)
	case int64, float64:
		return fmt.Sprintf("the number %v", x)
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%v", v)
}

// literalFix suggests how to write v so that it has the wanted schema type, when the
// change is only quoting or unquoting.
func literalFix(v any, schemaType string) string {
	switch x := v.(type) {
	case string:
		switch schemaType {
		case "integer":
			if _, err := strconv.ParseInt(x, 10, 64); err == nil {
				return fmt.Sprintf("; write %s without quotes", x)
			}
		case "number":
			if _, err := strconv.ParseFloat(x, 64); err == nil {
				return fmt.Sprintf("; write %s without quotes", x)
			}
		case "boolean":
			if x == "true" || x == "false" {
				return fmt.Sprintf("; write %s without quotes", x)
			}
		}
	case int64, float64:
		if schemaType == "string" {
			return fmt.Sprintf("; quote it: \"%v\"", x)
		}
	case bool:
		if schemaType == "string" {
			return "; quote the value if you meant a string (YAML 1.1 reads y, yes, on, n, no and off as booleans too)"
		}
	}
	return ""
}

// TypeMismatch explains why an expression of static type t cannot fill the schema
// field at p, or returns "" when it can or when either is unknown.
func (p Place) TypeMismatch(t *cel.Type) string {
	s := p.Schema
	if t == nil || s == nil || celenv.IsDynamic(t) || t.Kind() == types.NullTypeKind {
		return ""
	}
	if t.Kind() == types.OpaqueKind && t.TypeName() == "optional_type" {
		// An empty optional leaves the field out; a present one must fit.
		return p.TypeMismatch(t.Parameters()[0])
	}
	var ok bool
	want := Article(s.Type)
	switch {
	case s.XIntOrString:
		ok = t.Kind() == types.IntKind || t.Kind() == types.UintKind || t.Kind() == types.StringKind
		want = "an integer or a string"
	case s.Type == "string":
		switch t.Kind() {
		case types.StringKind, types.BytesKind, types.TimestampKind, types.DurationKind, types.OpaqueKind:
			ok = true
		}
	case s.Type == "integer":
		ok = t.Kind() == types.IntKind || t.Kind() == types.UintKind || t.Kind() == types.DoubleKind
	case s.Type == "number":
		ok = t.Kind() == types.IntKind || t.Kind() == types.UintKind || t.Kind() == types.DoubleKind
	case s.Type == "boolean":
		ok = t.Kind() == types.BoolKind
	case s.Type == "object":
		ok = t.Kind() == types.MapKind || t.Kind() == types.StructKind
	case s.Type == "array":
		ok = t.Kind() == types.ListKind
	default:
		ok = true
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("the expression is of type %s, but %s %s is %s", t.String(), p.Kind, p.At, want)
}

// Article names a schema type with its article: "an integer", "a string".
func Article(schemaType string) string {
	switch schemaType {
	case "integer", "object", "array":
		return "an " + schemaType
	case "boolean":
		return "a boolean"
	}
	return "a " + strings.TrimSpace(schemaType)
}
