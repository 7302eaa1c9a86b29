package apischema

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// This file compares the CRD in a cluster with the one a definition generates: which
// changes an apply would make, and which of them break what is stored.

// Change is one difference between a CRD in a cluster and the one the rules generate.
type Change struct {
	// Path is the field it is about (spec.ports[*].port), or "" for the resource.
	Path string
	// What says what changes, e.g. "removed" or "type string -> integer".
	What string
	// Breaking is true when objects stored under the old CRD may no longer be valid, or
	// lose data, or mean something else.
	Breaking bool
	// affects reports whether a stored object is one the change breaks.
	affects func(obj map[string]any) bool
}

func (c Change) String() string {
	if c.Path == "" {
		return c.What
	}
	return c.Path + ": " + c.What
}

// Affects reports whether a stored object (as the API server returns it) is one that a
// breaking change breaks: it sets a removed field, holds a value the new schema
// refuses, lacks a newly required field, or takes a default that changes.
func (c Change) Affects(obj map[string]any) bool {
	return c.affects != nil && c.affects(obj)
}

// Breaking returns the breaking changes among changes.
func Breaking(changes []Change) []Change {
	var out []Change
	for _, c := range changes {
		if c.Breaking {
			out = append(out, c)
		}
	}
	return out
}

// Same reports whether a CRD in a cluster already is what next describes: same names,
// scope, and version (schema, subresources, printer columns). Fields the API server
// fills in, and versions or fields that others added, are not compared.
func Same(live, next *apiextensionsv1.CustomResourceDefinition) bool {
	if live.Spec.Group != next.Spec.Group || live.Spec.Scope != next.Spec.Scope ||
		!equality.Semantic.DeepEqual(names(live.Spec.Names), names(next.Spec.Names)) {
		return false
	}
	for _, nv := range next.Spec.Versions {
		lv := version(live, nv.Name)
		if lv == nil || lv.Served != nv.Served || lv.Storage != nv.Storage ||
			!equality.Semantic.DeepEqual(lv.Schema, nv.Schema) ||
			!equality.Semantic.DeepEqual(lv.Subresources, nv.Subresources) ||
			!equality.Semantic.DeepEqual(lv.AdditionalPrinterColumns, nv.AdditionalPrinterColumns) {
			return false
		}
	}
	return true
}

// names are the names Same compares (acceptedNames and the rest are the server's).
func names(n apiextensionsv1.CustomResourceDefinitionNames) apiextensionsv1.CustomResourceDefinitionNames {
	return apiextensionsv1.CustomResourceDefinitionNames{Plural: n.Plural, Singular: n.Singular, Kind: n.Kind, ListKind: n.ListKind,
		ShortNames: n.ShortNames, Categories: n.Categories}
}

func version(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == name {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

// Compare lists the changes that applying next (a generated CRD, one version) over live
// would make, breaking or not. Changes to status are never breaking: the rules write
// it again.
func Compare(live, next *apiextensionsv1.CustomResourceDefinition) []Change {
	all := func(map[string]any) bool { return true }
	var out []Change
	if live.Spec.Scope != next.Spec.Scope {
		out = append(out, Change{What: fmt.Sprintf("scope %s -> %s: every stored object would be lost to the new scope", live.Spec.Scope, next.Spec.Scope), Breaking: true, affects: all})
	}
	if live.Spec.Names.Kind != next.Spec.Names.Kind {
		out = append(out, Change{What: fmt.Sprintf("kind %s -> %s", live.Spec.Names.Kind, next.Spec.Names.Kind), Breaking: true, affects: all})
	}
	if !slices.Equal(live.Spec.Names.ShortNames, next.Spec.Names.ShortNames) || !slices.Equal(live.Spec.Names.Categories, next.Spec.Names.Categories) {
		out = append(out, Change{What: "short names or categories changed"})
	}
	for _, nv := range next.Spec.Versions {
		lv := version(live, nv.Name)
		if lv == nil {
			var served []string
			for _, v := range live.Spec.Versions {
				served = append(served, v.Name)
			}
			out = append(out, Change{
				What:     fmt.Sprintf("version %s is new, and the CRD has %s: kubecel does not convert stored objects between versions", nv.Name, strings.Join(served, ", ")),
				Breaking: true, affects: all,
			})
			continue
		}
		if !equality.Semantic.DeepEqual(lv.AdditionalPrinterColumns, nv.AdditionalPrinterColumns) {
			out = append(out, Change{What: "printer columns changed"})
		}
		if !equality.Semantic.DeepEqual(lv.Subresources, nv.Subresources) {
			out = append(out, Change{What: "subresources changed"})
		}
		if lv.Schema == nil || lv.Schema.OpenAPIV3Schema == nil || nv.Schema == nil || nv.Schema.OpenAPIV3Schema == nil {
			continue
		}
		lr, nr := lv.Schema.OpenAPIV3Schema, nv.Schema.OpenAPIV3Schema
		for _, top := range []string{"spec", "status"} {
			ls, lok := lr.Properties[top]
			ns, nok := nr.Properties[top]
			at := steps{{key: top}}
			var found []Change
			switch {
			case lok && nok:
				found = compareField(&ls, &ns, at)
			case lok:
				found = []Change{removed(at)}
			case nok:
				found = []Change{{Path: top, What: "added"}}
			}
			if top == "status" {
				for i := range found {
					found[i].Breaking, found[i].affects = false, nil
				}
			}
			out = append(out, found...)
		}
		if !slices.Equal(sorted(lr.Required), sorted(nr.Required)) && !slices.Contains(lr.Required, "spec") && slices.Contains(nr.Required, "spec") {
			out = append(out, Change{Path: "spec", What: "now required", Breaking: true, affects: func(obj map[string]any) bool { _, ok := obj["spec"]; return !ok }})
		}
	}
	return out
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

func removed(at steps) Change {
	return Change{Path: at.String(), What: "removed: the API server would drop it from every stored object", Breaking: true, affects: at.present}
}

// compareField compares the old and new schema of one field.
func compareField(old, next *apiextensionsv1.JSONSchemaProps, at steps) []Change {
	path := at.String()
	if old.Type != next.Type {
		if old.Type == "integer" && next.Type == "number" {
			return []Change{{Path: path, What: "type integer -> number (every integer is a number)"}}
		}
		want := next.Type
		return []Change{{Path: path, What: fmt.Sprintf("type %s -> %s", typeName(old), typeName(next)), Breaking: true,
			affects: func(obj map[string]any) bool {
				return at.any(obj, func(v any) bool { return !isType(v, want) })
			}}}
	}
	var out []Change
	out = append(out, compareChecks(old, next, at)...)
	switch {
	case keeps(old) && !keeps(next) && next.AdditionalProperties == nil:
		allowed := next.Properties
		out = append(out, Change{Path: path, What: "free-form object -> object with fields: other fields would be dropped", Breaking: true,
			affects: func(obj map[string]any) bool {
				return at.any(obj, func(v any) bool {
					m, _ := v.(map[string]any)
					for k := range m {
						if _, ok := allowed[k]; !ok {
							return true
						}
					}
					return false
				})
			}})
		return out
	case !keeps(old) && keeps(next):
		return append(out, Change{Path: path, What: "object with fields -> free-form object"})
	}
	out = append(out, compareProperties(old, next, at)...)
	if old.Items != nil && old.Items.Schema != nil && next.Items != nil && next.Items.Schema != nil {
		out = append(out, compareField(old.Items.Schema, next.Items.Schema, at.items())...)
	}
	oldMap := old.AdditionalProperties != nil && old.AdditionalProperties.Schema != nil
	nextMap := next.AdditionalProperties != nil && next.AdditionalProperties.Schema != nil
	switch {
	case oldMap && nextMap:
		out = append(out, compareField(old.AdditionalProperties.Schema, next.AdditionalProperties.Schema, at.values())...)
	case oldMap && !nextMap:
		out = append(out, Change{Path: path, What: fmt.Sprintf("type %s -> %s", typeName(old), typeName(next)), Breaking: true, affects: at.present})
	}
	return out
}

func keeps(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

// compareProperties compares the fields of an object: removed, added, newly required.
func compareProperties(old, next *apiextensionsv1.JSONSchemaProps, at steps) []Change {
	var out []Change
	for _, name := range sortedKeys(old.Properties) {
		o := old.Properties[name]
		n, ok := next.Properties[name]
		if !ok {
			out = append(out, removed(at.key(name)))
			continue
		}
		out = append(out, compareField(&o, &n, at.key(name))...)
	}
	for _, name := range sortedKeys(next.Properties) {
		if _, ok := old.Properties[name]; !ok {
			out = append(out, Change{Path: at.key(name).String(), What: "added"})
		}
	}
	for _, name := range next.Required {
		if slices.Contains(old.Required, name) {
			continue
		}
		if p, ok := next.Properties[name]; ok && p.Default != nil {
			out = append(out, Change{Path: at.key(name).String(), What: "now required, with a default that stored objects without it take"})
			continue
		}
		out = append(out, Change{Path: at.key(name).String(), What: "now required, without a default", Breaking: true,
			affects: func(obj map[string]any) bool { return at.lacks(obj, name) }})
	}
	return out
}

func sortedKeys(m map[string]apiextensionsv1.JSONSchemaProps) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// compareChecks compares what a field's values must satisfy: enum, bounds, lengths,
// pattern, list type, CEL rules, and its default.
func compareChecks(old, next *apiextensionsv1.JSONSchemaProps, at steps) []Change {
	path := at.String()
	var out []Change
	refuses := func(what string) {
		out = append(out, Change{Path: path, What: what, Breaking: true, affects: func(obj map[string]any) bool {
			return at.any(obj, func(v any) bool { return !fits(next, v) })
		}})
	}
	if len(next.Enum) > 0 {
		switch {
		case len(old.Enum) == 0:
			refuses("now limited to " + enumText(next.Enum))
		case !subset(old.Enum, next.Enum):
			refuses(fmt.Sprintf("allowed values %s -> %s", enumText(old.Enum), enumText(next.Enum)))
		}
	}
	if tighter(old.Minimum, next.Minimum, true) || (next.ExclusiveMinimum && !old.ExclusiveMinimum && next.Minimum != nil) {
		refuses("minimum " + bound(old.Minimum) + " -> " + bound(next.Minimum))
	}
	if tighter(old.Maximum, next.Maximum, false) || (next.ExclusiveMaximum && !old.ExclusiveMaximum && next.Maximum != nil) {
		refuses("maximum " + bound(old.Maximum) + " -> " + bound(next.Maximum))
	}
	for _, c := range []struct {
		name      string
		old, next *int64
		min       bool
	}{
		{"minLength", old.MinLength, next.MinLength, true}, {"maxLength", old.MaxLength, next.MaxLength, false},
		{"minItems", old.MinItems, next.MinItems, true}, {"maxItems", old.MaxItems, next.MaxItems, false},
		{"minProperties", old.MinProperties, next.MinProperties, true}, {"maxProperties", old.MaxProperties, next.MaxProperties, false},
	} {
		if tighter(toFloat(c.old), toFloat(c.next), c.min) {
			refuses(c.name + " " + count(c.old) + " -> " + count(c.next))
		}
	}
	if next.Pattern != "" && next.Pattern != old.Pattern {
		refuses(fmt.Sprintf("pattern %q -> %q", old.Pattern, next.Pattern))
	}
	if listType(old) != listType(next) || !slices.Equal(old.XListMapKeys, next.XListMapKeys) {
		refuses(fmt.Sprintf("list type %s -> %s", listType(old), listType(next)))
	}
	out = append(out, compareRules(old, next, at)...)
	out = append(out, compareDefault(old, next, at)...)
	return out
}

// compareRules lists the CEL rules added and removed. A new rule breaks the stored
// objects it refuses; one that compares with the old object (oldSelf, such as
// immutable) only refuses later updates.
func compareRules(old, next *apiextensionsv1.JSONSchemaProps, at steps) []Change {
	var out []Change
	had := func(list apiextensionsv1.ValidationRules, r apiextensionsv1.ValidationRule) bool {
		return slices.ContainsFunc(list, func(o apiextensionsv1.ValidationRule) bool { return o.Rule == r.Rule })
	}
	for _, r := range next.XValidations {
		if had(old.XValidations, r) {
			continue
		}
		if strings.Contains(r.Rule, "oldSelf") {
			out = append(out, Change{Path: at.String(), What: fmt.Sprintf("new rule %q (checked on updates only)", r.Rule)})
			continue
		}
		rule := r
		node := next.DeepCopy()
		out = append(out, Change{Path: at.String(), What: fmt.Sprintf("new rule %q", r.Rule), Breaking: true,
			affects: func(obj map[string]any) bool {
				return at.any(obj, func(v any) bool { return !passes(node, rule, v) })
			}})
	}
	for _, r := range old.XValidations {
		if !had(next.XValidations, r) {
			out = append(out, Change{Path: at.String(), What: fmt.Sprintf("rule %q removed", r.Rule)})
		}
	}
	return out
}

// compareDefault: a changed or removed default changes the value of every stored object
// that does not set the field (the API server applies defaults when it reads them).
func compareDefault(old, next *apiextensionsv1.JSONSchemaProps, at steps) []Change {
	parent, name := at.parent()
	lacks := func(obj map[string]any) bool { return name != "" && parent.lacks(obj, name) }
	switch {
	case old.Default == nil && next.Default != nil:
		return []Change{{Path: at.String(), What: "default " + string(next.Default.Raw) + " added"}}
	case old.Default != nil && next.Default == nil:
		return []Change{{Path: at.String(), What: "default " + string(old.Default.Raw) + " removed: stored objects that do not set it would lose the value", Breaking: true, affects: lacks}}
	case old.Default != nil && !jsonEqual(old.Default.Raw, next.Default.Raw):
		return []Change{{Path: at.String(), What: fmt.Sprintf("default %s -> %s: stored objects that do not set it would change", old.Default.Raw, next.Default.Raw), Breaking: true, affects: lacks}}
	}
	return nil
}

func jsonEqual(a, b []byte) bool {
	va, errA := decode(a)
	vb, errB := decode(b)
	if errA != nil || errB != nil {
		return bytes.Equal(a, b)
	}
	return equality.Semantic.DeepEqual(va, vb)
}

// tighter reports whether next is a tighter lower (min) or upper bound than old.
func tighter(old, next *float64, min bool) bool {
	switch {
	case next == nil:
		return false
	case old == nil:
		return true
	case min:
		return *next > *old
	}
	return *next < *old
}

func toFloat(n *int64) *float64 {
	if n == nil {
		return nil
	}
	f := float64(*n)
	return &f
}

func bound(f *float64) string {
	if f == nil {
		return "none"
	}
	return fmt.Sprint(*f)
}

func count(n *int64) string {
	if n == nil {
		return "none"
	}
	return fmt.Sprint(*n)
}

func listType(s *apiextensionsv1.JSONSchemaProps) string {
	if s.Type != "array" {
		return ""
	}
	if s.XListType == nil {
		return "atomic"
	}
	return *s.XListType
}

func enumText(values []apiextensionsv1.JSON) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = string(v.Raw)
	}
	return strings.Join(parts, ", ")
}

// subset reports whether every value of a is in b.
func subset(a, b []apiextensionsv1.JSON) bool {
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y apiextensionsv1.JSON) bool { return jsonEqual(x.Raw, y.Raw) }) {
			return false
		}
	}
	return true
}
