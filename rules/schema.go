package rules

import (
	"cmp"
	"maps"
	"slices"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// This file builds CEL types from OpenAPI schemas, so that expressions reading the
// parent are type-checked against its schema.
//
// It follows the Kubernetes apiserver's conversion (k8s.io/apiserver/pkg/cel/common)
// with three differences that suit a controller rather than a validator:
//   - an object that keeps unknown fields (x-kubernetes-preserve-unknown-fields) is a
//     map of dyn, so that free-form values stay readable (the apiserver hides them);
//   - `metadata` is the full ObjectMeta shape, not only name and generateName;
//   - size bounds are only those the schema states (maxItems, maxLength,
//     maxProperties); unknown sizes are left for the runtime cost limit to guard
//     (the apiserver derives a bound from the maximum request size instead).

// parentTypeName names the root object type; nested types are named by their path from
// it (Parent.spec, Parent.spec.ports.@idx), which is what CEL type errors show. It must
// not be a variable name, or CEL would read `parent.spec` as a type name.
const parentTypeName = "Parent"

// parentDeclType converts the parent's schema into the declared type of `parent`.
func parentDeclType(s *apiextensionsv1.JSONSchemaProps) *apiservercel.DeclType {
	t := declType(s, true, parentTypeName)
	if !t.IsObject() {
		return nil
	}
	return t
}

// declType converts one schema node. resource is true at the root of a resource or of an
// embedded resource, where apiVersion, kind and metadata are always present.
//
// name is the node's type name: an object is named so, and what is below it by its path
// from it (name.field, name.@idx for a list's items, name.@elem for a map's values), as
// DeclType.MaybeAssignTypeName names them. Naming while converting, rather than naming
// a converted tree after, makes one tree instead of two (a renamed type keeps the
// unnamed one as its default value). With name "" nothing is named: objects are
// "object", as NewObjectType's callers in the apiserver name them before renaming.
func declType(s *apiextensionsv1.JSONSchemaProps, resource bool, name string) *apiservercel.DeclType {
	if s == nil || s.XIntOrString {
		return apiservercel.DynType
	}
	resource = resource || s.XEmbeddedResource
	switch s.Type {
	case "object":
		return objectDeclType(s, resource, name)
	case "array":
		if s.Items == nil || s.Items.Schema == nil {
			return apiservercel.NewListType(apiservercel.DynType, bound(s.MaxItems))
		}
		return apiservercel.NewListType(declType(s.Items.Schema, false, below(name, "@idx")), bound(s.MaxItems))
	case "string":
		if s.MaxLength == nil {
			return apiservercel.StringType
		}
		t := apiservercel.NewSimpleTypeWithMinSize("string", cel.StringType, types.String(""), apiservercel.MinStringSize)
		t.MaxElements = *s.MaxLength
		return t
	case "integer":
		return apiservercel.IntType
	case "number":
		return apiservercel.DoubleType
	case "boolean":
		return apiservercel.BoolType
	}
	if resource {
		return objectDeclType(s, true, name)
	}
	return apiservercel.DynType
}

// below is the type name of what is at step below the type named name; "" when name is
// "" (nothing is named).
func below(name, step string) string {
	if name == "" {
		return ""
	}
	return name + "." + step
}

func objectDeclType(s *apiextensionsv1.JSONSchemaProps, resource bool, name string) *apiservercel.DeclType {
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil && len(s.Properties) == 0 {
		return apiservercel.NewMapType(apiservercel.StringType, declType(s.AdditionalProperties.Schema, false, below(name, "@elem")), bound(s.MaxProperties))
	}
	keepsUnknown := s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
	if (len(s.Properties) == 0 || keepsUnknown) && !resource {
		// Free-form, or keeping fields it does not declare: any map, since a field the
		// schema does not name may still be there.
		return apiservercel.NewMapType(apiservercel.StringType, apiservercel.DynType, bound(s.MaxProperties))
	}
	fields := make(map[string]*apiservercel.DeclField, len(s.Properties)+3)
	for field := range s.Properties {
		if !isCELIdent(field) {
			// A property CEL cannot name as a field must be read with ["name"], which
			// only maps allow.
			return apiservercel.NewMapType(apiservercel.StringType, apiservercel.DynType, bound(s.MaxProperties))
		}
		prop := s.Properties[field]
		fields[field] = apiservercel.NewDeclField(field, declType(&prop, false, below(name, field)), false, nil, nil)
	}
	if resource {
		fields["apiVersion"] = apiservercel.NewDeclField("apiVersion", apiservercel.StringType, false, nil, nil)
		fields["kind"] = apiservercel.NewDeclField("kind", apiservercel.StringType, false, nil, nil)
		meta := parentMetaDeclType()
		if name != parentTypeName {
			meta = objectMetaDeclType(below(name, "metadata"))
		}
		fields["metadata"] = apiservercel.NewDeclField("metadata", meta, false, nil, nil)
	}
	return apiservercel.NewObjectType(cmp.Or(name, "object"), fields)
}

// parentMetaDeclType is the type of `parent.metadata`, the same in every rule: it is
// built once and shared (a DeclType is not changed once built).
var parentMetaDeclType = sync.OnceValue(func() *apiservercel.DeclType {
	return objectMetaDeclType(parentTypeName + ".metadata")
})

// objectMetaDeclType is metav1.ObjectMeta as CEL sees it in a stored object, named name
// (see declType).
func objectMetaDeclType(name string) *apiservercel.DeclType {
	str := apiservercel.StringType
	strMap := apiservercel.NewMapType(str, str, 0)
	field := func(name string, t *apiservercel.DeclType) *apiservercel.DeclField {
		return apiservercel.NewDeclField(name, t, false, nil, nil)
	}
	ownerRef := apiservercel.NewObjectType(cmp.Or(below(name, "ownerReferences.@idx"), "object"), map[string]*apiservercel.DeclField{
		"apiVersion":         field("apiVersion", str),
		"kind":               field("kind", str),
		"name":               field("name", str),
		"uid":                field("uid", str),
		"controller":         field("controller", apiservercel.BoolType),
		"blockOwnerDeletion": field("blockOwnerDeletion", apiservercel.BoolType),
	})
	return apiservercel.NewObjectType(cmp.Or(name, "object"), map[string]*apiservercel.DeclField{
		"name":                       field("name", str),
		"generateName":               field("generateName", str),
		"namespace":                  field("namespace", str),
		"uid":                        field("uid", str),
		"resourceVersion":            field("resourceVersion", str),
		"generation":                 field("generation", apiservercel.IntType),
		"creationTimestamp":          field("creationTimestamp", str),
		"deletionTimestamp":          field("deletionTimestamp", str),
		"deletionGracePeriodSeconds": field("deletionGracePeriodSeconds", apiservercel.IntType),
		"labels":                     field("labels", strMap),
		"annotations":                field("annotations", strMap),
		"finalizers":                 field("finalizers", apiservercel.NewListType(str, 0)),
		"ownerReferences":            field("ownerReferences", apiservercel.NewListType(ownerRef, 0)),
		"managedFields":              field("managedFields", apiservercel.NewListType(apiservercel.DynType, 0)),
	})
}

// bound returns a schema's stated size bound, or 0 when it states none.
func bound(max *int64) int64 {
	if max == nil || *max < 0 {
		return 0
	}
	return *max
}

// isCELIdent reports whether name can follow a dot in CEL: an identifier that is not a
// reserved word.
func isCELIdent(name string) bool {
	if name == "" || celReserved[name] {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

// celReserved are the words the CEL grammar reserves.
var celReserved = map[string]bool{
	"as": true, "break": true, "const": true, "continue": true, "else": true, "false": true,
	"for": true, "function": true, "if": true, "import": true, "in": true, "let": true,
	"loop": true, "package": true, "namespace": true, "null": true, "return": true,
	"true": true, "var": true, "void": true,
}

// hasDouble reports whether t declares a double anywhere, in which case stored integers
// in those places must be converted (see coerceNumbers).
func hasDouble(t *apiservercel.DeclType) bool {
	if t == nil {
		return false
	}
	if t.CelType().Kind() == types.DoubleKind {
		return true
	}
	for _, f := range t.Fields {
		if hasDouble(f.Type) {
			return true
		}
	}
	return hasDouble(t.ElemType)
}

// coerceNumbers returns v with every integer that t declares as a double converted to
// float64: JSON does not tell 1 from 1.0, but CEL does (int * double has no overload).
// Containers are copied only when something below them changes, which the second
// result reports.
func coerceNumbers(v any, t *apiservercel.DeclType) (any, bool) {
	if t == nil {
		return v, false
	}
	switch x := v.(type) {
	case int64:
		if t.CelType().Kind() == types.DoubleKind {
			return float64(x), true
		}
	case map[string]any:
		var out map[string]any
		for k, val := range x {
			var ft *apiservercel.DeclType
			if f, ok := t.Fields[k]; ok {
				ft = f.Type
			} else if t.IsMap() {
				ft = t.ElemType
			}
			nv, changed := coerceNumbers(val, ft)
			if !changed {
				continue
			}
			if out == nil {
				out = maps.Clone(x)
			}
			out[k] = nv
		}
		if out != nil {
			return out, true
		}
	case []any:
		if !t.IsList() {
			return v, false
		}
		var out []any
		for i, val := range x {
			nv, changed := coerceNumbers(val, t.ElemType)
			if !changed {
				continue
			}
			if out == nil {
				out = slices.Clone(x)
			}
			out[i] = nv
		}
		if out != nil {
			return out, true
		}
	}
	return v, false
}
