package format

// This file types a child's template by its apiVersion and kind for the built-in kinds
// whose schemas kubecel embeds (rules/builtin.json.gz): each kind's definitions become
// JSON Schema definitions, and the template schema an if/then per kind, so that an editor
// completes spec.replicas inside a Deployment and flags spec.replica. A value that is
// not a string may also be a whole-string ${...} expression, whose type is known only
// when the rule is loaded; text around ${} makes a string, as kubecel reads it.

import (
	"fmt"
	"os"
	"slices"

	"github.com/invopop/jsonschema"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubecel/kubecel/rules/internal/builtin"
)

// builtinFile holds the built-in kinds' schemas, relative to this package.
const builtinFile = "../../builtin.json.gz"

// ExprPattern matches a string that is exactly one ${...} expression, which may stand
// for a value of any type.
const ExprPattern = `^\$\{[\s\S]*\}$`

// templateSchema is the schema of a child's template: an object, typed by its
// apiVersion and kind where they name an embedded built-in kind. It returns the
// definitions the kinds refer to, named as in the embedded file.
func templateSchema(description string) (*jsonschema.Schema, map[string]*jsonschema.Schema, error) {
	data, err := os.ReadFile(builtinFile)
	if err != nil {
		return nil, nil, err
	}
	f, err := builtin.Decode(data)
	if err != nil {
		return nil, nil, err
	}
	defs := make(map[string]*jsonschema.Schema, len(f.Definitions))
	for name, d := range f.Definitions {
		defs[name] = kubeSchema(d)
	}
	t := &jsonschema.Schema{Type: "object", Description: description}
	for _, k := range f.Kinds {
		if _, ok := f.Definitions[k.Schema]; !ok {
			return nil, nil, fmt.Errorf("kind %s: no definition %s", k.Kind, k.Schema)
		}
		apiVersion := k.Version
		if k.Group != "" {
			apiVersion = k.Group + "/" + k.Version
		}
		head := jsonschema.NewProperties()
		head.Set("apiVersion", &jsonschema.Schema{Const: apiVersion})
		head.Set("kind", &jsonschema.Schema{Const: k.Kind})
		t.AllOf = append(t.AllOf, &jsonschema.Schema{
			If:   &jsonschema.Schema{Properties: head, Required: []string{"apiVersion", "kind"}},
			Then: &jsonschema.Schema{Ref: "#/$defs/" + k.Schema},
		})
	}
	return t, defs, nil
}

// kubeSchema converts one embedded schema to the JSON Schema of a template value.
func kubeSchema(p apiextensionsv1.JSONSchemaProps) *jsonschema.Schema {
	if p.Ref != nil {
		return &jsonschema.Schema{Ref: "#/$defs/" + *p.Ref}
	}
	if p.XIntOrString {
		return &jsonschema.Schema{Extras: map[string]any{"type": []string{"integer", "string"}}}
	}
	orExpr := func(t string) *jsonschema.Schema {
		return &jsonschema.Schema{Pattern: ExprPattern, Extras: map[string]any{"type": []string{t, "string"}}}
	}
	switch p.Type {
	case "string":
		return &jsonschema.Schema{Type: "string"}
	case "integer", "number", "boolean":
		return orExpr(p.Type)
	case "array":
		s := orExpr("array")
		if p.Items != nil && p.Items.Schema != nil {
			s.Items = kubeSchema(*p.Items.Schema)
		}
		return s
	case "object", "":
		if p.Type == "" && len(p.Properties) == 0 && p.AdditionalProperties == nil {
			return &jsonschema.Schema{} // a quantity, or anything
		}
		s := orExpr("object")
		if len(p.Properties) > 0 {
			s.Properties = jsonschema.NewProperties()
			names := make([]string, 0, len(p.Properties))
			for name := range p.Properties {
				names = append(names, name)
			}
			slices.Sort(names)
			for _, name := range names {
				s.Properties.Set(name, kubeSchema(p.Properties[name]))
			}
		}
		keep := p.XPreserveUnknownFields != nil && *p.XPreserveUnknownFields
		switch ap := p.AdditionalProperties; {
		case ap != nil && ap.Schema != nil:
			s.AdditionalProperties = kubeSchema(*ap.Schema)
		case ap == nil && len(p.Properties) > 0 && !keep:
			s.AdditionalProperties = jsonschema.FalseSchema
		}
		return s
	}
	return &jsonschema.Schema{}
}
