package apischema

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// This file reads the fields of spec, status and types: a field is a type with markers
// ("integer | default=1") or a map of fields (a nested object).

// The basic types. float is kro's name for number.
var basicTypes = []string{"string", "integer", "number", "float", "boolean", "object"}

var (
	fieldPattern    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	typeNamePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
)

// scope is where a field is.
type scope struct {
	// status is true under status, whose fields the controller writes: none may be
	// required.
	status bool
	// inList is true under the items of a list that is not listType=map: the API server
	// cannot match an item with its old value there, so a field cannot be immutable.
	inList bool
	// name is the field's name, for messages of the schema (immutable).
	name string
}

// object builds the schema of a nested object from its fields.
func (p *parser) object(fields map[string]any, at Path, sc scope) *apiextensionsv1.JSONSchemaProps {
	s := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	if len(fields) == 0 {
		p.fail(at, "an object needs at least one field; write object for a free-form object")
		return s
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fat := at.key(name)
		if !fieldPattern.MatchString(name) {
			p.fail(fat, fmt.Sprintf("invalid field name %q: use letters, digits and _, starting with a letter (expressions read it as parent.spec.%s)", name, name))
			continue
		}
		fsc := sc
		fsc.name = name
		fs, required := p.field(fields[name], fat, fsc)
		if fs == nil {
			continue
		}
		s.Properties[name] = *fs
		if required {
			s.Required = append(s.Required, name)
		}
	}
	return s
}

// field builds the schema of one field and says whether it is required.
func (p *parser) field(v any, at Path, sc scope) (*apiextensionsv1.JSONSchemaProps, bool) {
	switch x := v.(type) {
	case string:
		return p.typed(x, at, sc)
	case map[string]any:
		return p.object(x, at, sc), false
	}
	p.fail(at, "must be a type such as string | required=true, or a map of fields, not "+describe(v))
	return nil, false
}

// typed builds the schema of "type | markers".
func (p *parser) typed(text string, at Path, sc scope) (*apiextensionsv1.JSONSchemaProps, bool) {
	typ, markers, _ := strings.Cut(text, "|")
	typ = strings.TrimSpace(typ)
	if typ == "" {
		p.fail(at, fmt.Sprintf("%q has no type: write one of %s, []T, map[string]T or a name from types before the |", text, strings.Join(basicTypes, ", ")))
		return nil, false
	}
	ms, err := parseMarkers(markers)
	if err != nil {
		p.fail(at, fmt.Sprintf("%q: %v", text, err))
		return nil, false
	}
	// The items of a list with listType=map are told apart by their keys: their fields
	// may be immutable.
	keyed := slices.Contains(ms, marker{key: "listType", value: "map"})
	s := p.typeExpr(typ, at, sc, keyed)
	if s == nil {
		return nil, false
	}
	return s, p.apply(s, ms, at, sc)
}

// typeExpr builds the schema of a type: a basic type, []T, map[string]T, or a named
// type. keyed says that the outermost list has listType=map.
func (p *parser) typeExpr(typ string, at Path, sc scope, keyed bool) *apiextensionsv1.JSONSchemaProps {
	switch {
	case strings.HasPrefix(typ, "[]"):
		inner := sc
		inner.inList = inner.inList || !keyed
		items := p.typeExpr(strings.TrimSpace(typ[2:]), at, inner, false)
		if items == nil {
			return nil
		}
		return &apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: items}}
	case strings.HasPrefix(typ, "map["):
		end := strings.Index(typ, "]")
		if end < 0 {
			p.fail(at, fmt.Sprintf("type %q: a map is map[string]T", typ))
			return nil
		}
		if key := strings.TrimSpace(typ[4:end]); key != "string" {
			p.fail(at, fmt.Sprintf("type %q: map keys are strings in Kubernetes objects: write map[string]%s", typ, typ[end+1:]))
			return nil
		}
		values := p.typeExpr(strings.TrimSpace(typ[end+1:]), at, sc, false)
		if values == nil {
			return nil
		}
		return &apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: values}}
	}
	switch typ {
	case "string", "integer", "boolean":
		return &apiextensionsv1.JSONSchemaProps{Type: typ}
	case "number", "float":
		return &apiextensionsv1.JSONSchemaProps{Type: "number"}
	case "object":
		keep := true
		return &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &keep}
	}
	if _, ok := p.types[typ]; ok {
		return p.named(typ, sc)
	}
	names := slices.Clone(basicTypes)
	for name := range p.types {
		names = append(names, name)
	}
	p.fail(at, fmt.Sprintf("unknown type %q%s: use one of %s, []T, map[string]T or a name from types", typ, closest(typ, names), strings.Join(basicTypes, ", ")))
	return nil
}

// named resolves a named type where it is used. Its problems are reported at its
// definition, under types.
func (p *parser) named(name string, sc scope) *apiextensionsv1.JSONSchemaProps {
	if i := slices.Index(p.resolving, name); i >= 0 {
		cycle := append(slices.Clone(p.resolving[i:]), name)
		p.fail(Path{"types", p.resolving[i]}, "the types refer to each other in a cycle: "+strings.Join(cycle, " -> ")+"; an object cannot contain itself")
		return nil
	}
	p.resolving = append(p.resolving, name)
	defer func() { p.resolving = p.resolving[:len(p.resolving)-1] }()
	s, _ := p.field(p.types[name], Path{"types", name}, scope{status: sc.status, inList: sc.inList, name: sc.name})
	return s
}

// checkTypes reads every named type once, so that the problems of a type nobody uses
// are reported too.
func (p *parser) checkTypes() {
	names := make([]string, 0, len(p.types))
	for name := range p.types {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		switch {
		case !typeNamePattern.MatchString(name):
			p.fail(Path{"types", name}, fmt.Sprintf("invalid type name %q: use letters, digits and _, starting with a letter", name))
		case slices.Contains(basicTypes, name):
			p.fail(Path{"types", name}, fmt.Sprintf("%q is a basic type: name the type otherwise", name))
		default:
			p.named(name, scope{name: name})
		}
	}
}
