package format

// The schema's generator lives in a test file, so that the JSON Schema library is built
// into the tests (TestSchemaIsCurrent writes rules/rules.schema.json with -update) and
// not into kubecel, which only reads the field names (keys.go).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/invopop/jsonschema"
)

// Package is the import path of this package, which Schema needs to match the comments
// it reads with the types.
const Package = "github.com/kubecel/kubecel/rules/internal/format"

// The schemas' $id: where each is published, the file of the repository's main branch
// (a release's is the same path under its tag).
const (
	SchemaID     = "https://raw.githubusercontent.com/kubecel/kubecel/main/rules/rules.schema.json"
	TestSchemaID = "https://raw.githubusercontent.com/kubecel/kubecel/main/rules/ruletest.schema.json"
)

// Schema returns the JSON Schema (draft 2020-12) of a rules file, generated from
// RuleSet and the types it holds, with their field comments as descriptions. dir is the
// directory of this package's source, which the comments are read from. A child's
// template is typed by its apiVersion and kind for the built-in kinds (kubeschema_test.go).
func Schema(dir string) ([]byte, error) {
	r, err := reflector(dir)
	if err != nil {
		return nil, err
	}
	s := r.Reflect(&RuleSet{})
	s.ID, s.Title = SchemaID, "kubecel rules file"
	child, ok := s.Definitions["Child"]
	if !ok {
		return nil, fmt.Errorf("no definition of Child")
	}
	old, _ := child.Properties.Get("template")
	template, defs, err := templateSchema(old.Description)
	if err != nil {
		return nil, err
	}
	child.Properties.Set("template", template)
	for name, d := range defs {
		if _, taken := s.Definitions[name]; taken {
			return nil, fmt.Errorf("definition %s is both a rules file type and a built-in kind's", name)
		}
		s.Definitions[name] = d
	}
	return encode(s)
}

// RuleTestSchema returns the JSON Schema of a kubecel test file (RuleTest), as Schema does
// for a rules file.
func RuleTestSchema(dir string) ([]byte, error) {
	r, err := reflector(dir)
	if err != nil {
		return nil, err
	}
	s := r.Reflect(&RuleTest{})
	s.ID, s.Title = TestSchemaID, "kubecel test file"
	return encode(s)
}

// reflector reads the types of this package, with their comments as descriptions.
func reflector(dir string) (*jsonschema.Reflector, error) {
	r := &jsonschema.Reflector{
		Anonymous:                  true,
		RequiredFromJSONSchemaTags: true,
		// Templates and status fields are open maps; everything else is closed, as
		// package rules rejects unknown fields.
	}
	if err := r.AddGoComments(Package, dir); err != nil {
		return nil, fmt.Errorf("read the comments of %s: %w", dir, err)
	}
	// Comments are wrapped for Go; editors wrap descriptions themselves.
	for k, v := range r.CommentMap {
		r.CommentMap[k] = strings.Join(strings.Fields(v), " ")
	}
	return r, nil
}

func encode(s *jsonschema.Schema) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// JSONSchemaExtend fixes apiVersion and kind to their only values.
func (RuleSet) JSONSchemaExtend(s *jsonschema.Schema) {
	if p, ok := s.Properties.Get("apiVersion"); ok {
		p.Const = APIVersion
	}
	if p, ok := s.Properties.Get("kind"); ok {
		p.Const = Kind
	}
}

// JSONSchemaExtend lists the policies.
func (Lifecycle) JSONSchemaExtend(s *jsonschema.Schema) {
	for _, key := range []string{"onRemove", "onParentDelete"} {
		if p, ok := s.Properties.Get(key); ok {
			p.Enum = []any{PolicyDelete, PolicyKeep}
		}
	}
}

// JSONSchemaExtend gives the form of the steps and lists the failure policies.
func (Rollout) JSONSchemaExtend(s *jsonschema.Schema) {
	if p, ok := s.Properties.Get("steps"); ok && p.Items != nil {
		p.Items.Pattern = StepPattern
	}
	if p, ok := s.Properties.Get("onFailure"); ok {
		p.Enum = []any{OnFailurePause, OnFailureRollback}
	}
}

// JSONSchemaExtend says that a rule names its parent resource (parent.apiVersion and
// parent.resource), or defines it (api) and then leaves both out.
func (Rule) JSONSchemaExtend(s *jsonschema.Schema) {
	required := func(keys ...string) *jsonschema.Schema { return &jsonschema.Schema{Required: keys} }
	props := func(key string, v *jsonschema.Schema) *jsonschema.Schema {
		p := jsonschema.NewProperties()
		p.Set(key, v)
		return &jsonschema.Schema{Properties: p}
	}
	s.If = required("api")
	s.Then = props("parent", &jsonschema.Schema{Not: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{required("apiVersion"), required("resource")}}})
	orElse := props("parent", required("apiVersion", "resource"))
	orElse.Required = []string{"parent"}
	s.Else = orElse
}

// JSONSchemaExtend lists the scopes.
func (API) JSONSchemaExtend(s *jsonschema.Schema) {
	if p, ok := s.Properties.Get("scope"); ok {
		p.Enum = []any{ScopeNamespaced, ScopeCluster}
	}
	// A field is a type with markers, or a map of fields.
	field := &jsonschema.Schema{OneOf: []*jsonschema.Schema{{Type: "string"}, {Type: "object"}}}
	for _, key := range []string{"spec", "status", "types"} {
		if p, ok := s.Properties.Get(key); ok {
			p.AdditionalProperties = field
		}
	}
}

// JSONSchemaExtend lists the column types.
func (PrinterColumn) JSONSchemaExtend(s *jsonschema.Schema) {
	if p, ok := s.Properties.Get("type"); ok {
		p.Enum = []any{"integer", "number", "string", "boolean", "date"}
	}
}

// JSONSchemaExtend fixes apiVersion and kind to their only values.
func (RuleTest) JSONSchemaExtend(s *jsonschema.Schema) {
	if p, ok := s.Properties.Get("apiVersion"); ok {
		p.Const = APIVersion
	}
	if p, ok := s.Properties.Get("kind"); ok {
		p.Const = TestKind
	}
}

// JSONSchema is a path or a list of paths.
func (Paths) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{OneOf: []*jsonschema.Schema{
		{Type: "string", MinLength: ptr(uint64(1))},
		{Type: "array", Items: &jsonschema.Schema{Type: "string", MinLength: ptr(uint64(1))}, MinItems: ptr(uint64(1))},
	}}
}

// JSONSchema is an object, or {file, name}.
func (ObjectOrFile) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{fileRef(true), object()}}
}

// JSONSchema is a list of objects, or {file}.
func (ChildrenOrFile) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "array", Items: object()}, fileRef(false)}}
}

// fileRef is {file: PATH}, with name: NAME when withName.
func fileRef(withName bool) *jsonschema.Schema {
	props := jsonschema.NewProperties()
	props.Set("file", &jsonschema.Schema{Type: "string", MinLength: ptr(uint64(1)), Description: "A YAML file, relative to the test file."})
	if withName {
		props.Set("name", &jsonschema.Schema{Type: "string", Description: "The name of the object in the file; may be left out when the file holds one object."})
	}
	return &jsonschema.Schema{Type: "object", Properties: props, Required: []string{"file"}, AdditionalProperties: jsonschema.FalseSchema}
}

// object is a Kubernetes object written out.
func object() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Required: []string{"apiVersion", "kind"}}
}

func ptr[T any](v T) *T { return &v }
