package kindschema

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubecel/kubecel/rules/internal/parse"
)

// Place is where a template value sits in the schema of an object's kind, when that is
// known. The zero Place knows nothing and takes any value.
type Place struct {
	// Schema is the value's schema; nil when unknown.
	Schema *apiextensionsv1.JSONSchemaProps
	// Kind and At name the place in messages: `Deployment` and `.spec.replicas`.
	Kind string
	At   string
	// Resource is true at the root of an object or of an embedded resource, which always
	// has apiVersion, kind and metadata.
	Resource bool
	// meta is the schema of ObjectMeta, every resource's metadata; nil when unknown.
	meta *apiextensionsv1.JSONSchemaProps
}

// Object is the Place of the root of an object of a kind whose schema is s (nil when
// unknown); meta is the schema of ObjectMeta (nil when unknown).
func Object(kind string, s, meta *apiextensionsv1.JSONSchemaProps) Place {
	return Place{Kind: kind, Schema: s, Resource: s != nil, meta: meta}
}

// Key is the place of the value at key k of the map at p.
func (p Place) Key(k string) Place {
	p.At += "." + k
	if p.Schema == nil && !p.Resource {
		return p
	}
	p.Schema, _ = p.field(k)
	p.Resource = p.Schema != nil && p.Schema.XEmbeddedResource
	return p
}

// Item is the place of item i of the list at p.
func (p Place) Item(i int) Place {
	p.At += fmt.Sprintf("[%d]", i)
	if p.Schema != nil && p.Schema.Items != nil {
		p.Schema = p.Schema.Items.Schema
	} else {
		p.Schema = nil
	}
	p.Resource = p.Schema != nil && p.Schema.XEmbeddedResource
	return p
}

// field returns the schema of field key of the object at p, or nil when the schema does
// not say, and whether such an object may hold the field at all. An unknown schema takes
// any field.
//
// An object's schema declares its fields unless it keeps unknown fields
// (x-kubernetes-preserve-unknown-fields), maps any key to a value
// (additionalProperties), or declares no property at all (a free-form object, a
// quantity, an int-or-string): those take any field.
func (p Place) field(key string) (*apiextensionsv1.JSONSchemaProps, bool) {
	if p.Resource {
		switch key {
		case "apiVersion", "kind":
			return &apiextensionsv1.JSONSchemaProps{Type: "string"}, true
		case "metadata":
			if p.meta != nil {
				return p.meta, true
			}
		}
	}
	s := p.Schema
	if s == nil {
		return nil, true
	}
	if prop, ok := s.Properties[key]; ok {
		return &prop, true
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
	case s == nil, len(s.Properties) == 0, s.XIntOrString, KeepsUnknown(s):
		return false
	case s.Type != "" && s.Type != "object":
		// Not an object: a map there is the wrong type, which LiteralMismatch reports.
		return false
	case s.AdditionalProperties != nil && (s.AdditionalProperties.Allows || s.AdditionalProperties.Schema != nil):
		return false
	}
	return true
}

// KeepsUnknown reports whether s keeps fields it does not declare
// (x-kubernetes-preserve-unknown-fields: true).
func KeepsUnknown(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

// UnknownField explains why the object at p may not hold the field key (the API server
// refuses undeclared fields), or returns "" when it may or when its schema is not
// known. The message names the nearest field the schema declares.
func (p Place) UnknownField(key string) string {
	if _, ok := p.field(key); ok {
		return ""
	}
	declared := make([]string, 0, len(p.Schema.Properties)+3)
	for name := range p.Schema.Properties {
		declared = append(declared, name)
	}
	if p.Resource {
		for _, name := range []string{"apiVersion", "kind", "metadata"} {
			if !slices.Contains(declared, name) {
				declared = append(declared, name)
			}
		}
	}
	where := p.Kind
	if p.At != "" {
		where += " " + p.At
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
