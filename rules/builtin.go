package rules

import (
	_ "embed"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules/internal/builtin"
)

// This file is the schemas of the built-in Kubernetes kinds (Deployment, Service,
// ConfigMap, Namespace, ...), embedded so that rules using them are type-checked
// without a cluster. They are decoded on the first lookup of a built-in kind, not at
// start-up.

//go:generate go run ./internal/genbuiltin -out builtin.json.gz

//go:embed builtin.json.gz
var builtinData []byte

// builtinSchemas is the decoded embedded file. It is immutable once built.
type builtinSchemas struct {
	version    string
	byKind     map[schema.GroupVersionKind]*apiextensionsv1.JSONSchemaProps
	byResource map[schema.GroupVersionResource]*apiextensionsv1.JSONSchemaProps
}

// embedded decodes the embedded schemas on first use.
var embedded = sync.OnceValue(decodeBuiltins)

// decodeBuiltins decodes the embedded file and resolves the schema of every kind. A file
// that does not decode (which a test rules out) leaves every built-in kind unknown, so
// expressions stay dynamically typed.
func decodeBuiltins() *builtinSchemas {
	b := &builtinSchemas{
		byKind:     map[schema.GroupVersionKind]*apiextensionsv1.JSONSchemaProps{},
		byResource: map[schema.GroupVersionResource]*apiextensionsv1.JSONSchemaProps{},
	}
	f, err := builtin.Decode(builtinData)
	if err != nil {
		return b
	}
	b.version = f.KubernetesVersion
	r := &resolver{defs: f.Definitions, done: map[string]*apiextensionsv1.JSONSchemaProps{}, open: map[string]bool{}}
	for _, k := range f.Kinds {
		s := r.definition(k.Schema)
		gvk := schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
		gvr := schema.GroupVersionResource{Group: k.Group, Version: k.Version, Resource: k.Resource}
		b.byKind[gvk] = s
		b.byResource[gvr] = s
	}
	return b
}

// BuiltinKubernetesVersion is the Kubernetes version whose built-in kinds' schemas are
// embedded (e.g. v1.36.3), or "" when they cannot be read.
func BuiltinKubernetesVersion() string { return embedded().version }

// BuiltinSchemas is the SchemaSource of the embedded built-in kinds. Load consults it for
// every kind that Options.Schemas has no schema for.
func BuiltinSchemas() SchemaSource { return builtinSource{} }

type builtinSource struct{}

// ResourceSchema implements SchemaSource.
func (builtinSource) ResourceSchema(gvr schema.GroupVersionResource) *apiextensionsv1.JSONSchemaProps {
	return embedded().byResource[gvr]
}

// KindSchema implements SchemaSource.
func (builtinSource) KindSchema(gvk schema.GroupVersionKind) *apiextensionsv1.JSONSchemaProps {
	return embedded().byKind[gvk]
}

// withBuiltins asks src first and the built-in kinds second.
type withBuiltins struct{ src SchemaSource }

func (w withBuiltins) ResourceSchema(gvr schema.GroupVersionResource) *apiextensionsv1.JSONSchemaProps {
	if w.src != nil {
		if s := w.src.ResourceSchema(gvr); s != nil {
			return s
		}
	}
	return builtinSource{}.ResourceSchema(gvr)
}

func (w withBuiltins) KindSchema(gvk schema.GroupVersionKind) *apiextensionsv1.JSONSchemaProps {
	if w.src != nil {
		if s := w.src.KindSchema(gvk); s != nil {
			return s
		}
	}
	return builtinSource{}.KindSchema(gvk)
}

// resolver replaces the references of the embedded definitions by the schemas they name.
// A definition is resolved once and shared: the schemas are never modified.
type resolver struct {
	defs map[string]apiextensionsv1.JSONSchemaProps
	done map[string]*apiextensionsv1.JSONSchemaProps
	// open are the definitions being resolved; a reference back to one of them (a
	// recursive type) becomes a free-form object.
	open map[string]bool
}

func (r *resolver) definition(name string) *apiextensionsv1.JSONSchemaProps {
	if s, ok := r.done[name]; ok {
		return s
	}
	if r.open[name] {
		keep := true
		return &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &keep}
	}
	def, ok := r.defs[name]
	if !ok {
		return &apiextensionsv1.JSONSchemaProps{}
	}
	r.open[name] = true
	s := r.resolve(def)
	delete(r.open, name)
	r.done[name] = &s
	return &s
}

func (r *resolver) resolve(s apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	if s.Ref != nil {
		return *r.definition(*s.Ref)
	}
	if len(s.Properties) > 0 {
		props := make(map[string]apiextensionsv1.JSONSchemaProps, len(s.Properties))
		for name, p := range s.Properties {
			props[name] = r.resolve(p)
		}
		s.Properties = props
	}
	if s.Items != nil && s.Items.Schema != nil {
		item := r.resolve(*s.Items.Schema)
		s.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &item}
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil {
		value := r.resolve(*ap.Schema)
		s.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &value}
	}
	return s
}
