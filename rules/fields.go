package rules

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules/internal/parse"
)

// This file decides which fields an object may hold, by the schema of its kind, as the
// API server does: server-side apply (what the controller writes with) refuses a field
// that the schema does not declare (`.spec.replica: field not declared in schema`), so
// that a misspelt field in a template would fail every parent. Load refuses it instead,
// naming the field and the nearest one the schema declares.
//
// An object's schema declares its fields unless it keeps unknown fields
// (x-kubernetes-preserve-unknown-fields), maps any key to a value
// (additionalProperties), or declares no property at all (a free-form object, a
// quantity, an int-or-string): those take any field. The root of an object, and an
// embedded resource (x-kubernetes-embedded-resource), always have apiVersion, kind and
// metadata, and metadata is the standard ObjectMeta whatever a CRD's schema says of it.

// fieldOf returns the schema of the field key of an object whose schema is s, or nil
// when it does not say, and whether such an object may hold the field at all. resource
// is true at the root of an object or of an embedded resource. A nil s takes any field.
func fieldOf(s *apiextensionsv1.JSONSchemaProps, key string, resource bool) (*apiextensionsv1.JSONSchemaProps, bool) {
	if resource {
		switch key {
		case "apiVersion", "kind":
			return &apiextensionsv1.JSONSchemaProps{Type: "string"}, true
		case "metadata":
			if om := objectMetaSchema(); om != nil {
				return om, true
			}
		}
	}
	if s == nil {
		return nil, true
	}
	if p, ok := s.Properties[key]; ok {
		return &p, true
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil {
		return ap.Schema, true
	}
	return nil, !closedObject(s)
}

// closedObject reports whether an object of schema s may hold only the fields s
// declares.
func closedObject(s *apiextensionsv1.JSONSchemaProps) bool {
	switch {
	case s == nil, len(s.Properties) == 0, s.XIntOrString, keepsUnknown(s):
		return false
	case s.Type != "" && s.Type != "object":
		// Not an object: a map there is the wrong type, which literalMismatch reports.
		return false
	case s.AdditionalProperties != nil && (s.AdditionalProperties.Allows || s.AdditionalProperties.Schema != nil):
		return false
	}
	return true
}

// unknownField explains why the object at vs may not hold the field key, or returns ""
// when it may (or when its schema is not known). The message names the nearest field
// the schema declares.
func (vs valueSchema) unknownField(key string) string {
	if _, ok := fieldOf(vs.schema, key, vs.resource); ok {
		return ""
	}
	declared := make([]string, 0, len(vs.schema.Properties)+3)
	for name := range vs.schema.Properties {
		declared = append(declared, name)
	}
	if vs.resource {
		for _, name := range []string{"apiVersion", "kind", "metadata"} {
			if !slices.Contains(declared, name) {
				declared = append(declared, name)
			}
		}
	}
	where := vs.kind
	if vs.at != "" {
		where += " " + vs.at
	}
	what := fmt.Sprintf("%s declares no field %q, and the API server refuses undeclared fields", where, key)
	if hint := parse.DidYouMean(key, declared); hint != "" {
		return "unknown field" + hint + ": " + what
	}
	return "unknown field: " + what + nearestFields(key, declared)
}

// nearestFields names the fields an object declares when they are few, else the few
// whose spelling is nearest to name.
func nearestFields(name string, declared []string) string {
	if len(declared) == 0 {
		return ""
	}
	if len(declared) <= 8 {
		slices.Sort(declared)
		return "; it declares " + quoteList(declared)
	}
	distance := func(field string) int { return parse.EditDistance(strings.ToLower(name), strings.ToLower(field)) }
	slices.SortFunc(declared, func(a, b string) int {
		if da, db := distance(a), distance(b); da != db {
			return da - db
		}
		return strings.Compare(a, b)
	})
	return fmt.Sprintf("; the nearest of its %d fields are %s", len(declared), quoteList(declared[:4]))
}

// quoteList renders names as 'a', 'b' and 'c'.
func quoteList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "'" + n + "'"
	}
	if len(quoted) == 1 {
		return quoted[0]
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " and " + quoted[len(quoted)-1]
}

// objectMetaSchema is the schema of metav1.ObjectMeta, taken from the embedded built-in
// kinds (every one has it as its metadata); nil when they cannot be read.
var objectMetaSchema = sync.OnceValue(func() *apiextensionsv1.JSONSchemaProps {
	cm := builtinSource{}.KindSchema(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	if cm == nil {
		return nil
	}
	if md, ok := cm.Properties["metadata"]; ok && len(md.Properties) > 0 {
		return &md
	}
	return nil
})
