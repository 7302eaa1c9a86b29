package apischema

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apiextensionscel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// This file refuses what the API server would refuse in the generated CRD's schema,
// with the API server's own libraries: a schema that is not structural, a default that
// does not validate, a CEL rule that does not compile or costs too much.

// staticCostLimit is the most a CRD's CEL rule may be estimated to cost
// (StaticEstimatedCostLimit of the API server's CRD validation).
const staticCostLimit = 10_000_000

// internal converts a v1 schema to the API server's internal form, which its schema
// libraries take.
func internal(s *apiextensionsv1.JSONSchemaProps) (*apiextensions.JSONSchemaProps, error) {
	out := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// structural returns the structural schema of s.
func structural(s *apiextensionsv1.JSONSchemaProps) (*structuralschema.Structural, error) {
	in, err := internal(s)
	if err != nil {
		return nil, err
	}
	return structuralschema.NewStructural(in)
}

// checkSchema checks the whole schema of an object as the API server checks a CRD's.
func checkSchema(root *apiextensionsv1.JSONSchemaProps) []Problem {
	st, err := structural(root)
	if err != nil {
		return []Problem{{Message: "the generated schema is not structural: " + err.Error()}}
	}
	var out []Problem
	for _, e := range structuralschema.ValidateStructural(field.NewPath("openAPIV3Schema"), st) {
		out = append(out, fieldProblem(e))
	}
	if len(out) > 0 {
		return out
	}
	errs, err := defaulting.ValidateDefaults(context.Background(), field.NewPath("openAPIV3Schema"), st, true, true)
	if err != nil {
		return []Problem{{Message: "cannot check the defaults: " + err.Error()}}
	}
	for _, e := range errs {
		out = append(out, fieldProblem(e))
	}
	return append(out, checkRules(root, nil)...)
}

// checkRules compiles the CEL rules of s and of everything under it, as the API server
// does when a CRD is written.
func checkRules(s *apiextensionsv1.JSONSchemaProps, at Path) []Problem {
	var out []Problem
	if len(s.XValidations) > 0 {
		out = append(out, compileRules(s, at)...)
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		prop := s.Properties[name]
		out = append(out, checkRules(&prop, at.key(name))...)
	}
	if s.Items != nil && s.Items.Schema != nil {
		out = append(out, checkRules(s.Items.Schema, at)...)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		out = append(out, checkRules(s.AdditionalProperties.Schema, at)...)
	}
	return out
}

func compileRules(s *apiextensionsv1.JSONSchemaProps, at Path) []Problem {
	st, err := structural(s)
	if err != nil {
		return []Problem{{Path: at, Message: err.Error()}}
	}
	decl := model.SchemaDeclType(st, false)
	if decl == nil {
		return []Problem{{Path: at, Message: "cannot declare the field's type for its CEL rules"}}
	}
	results, err := apiextensionscel.Compile(st, decl, celconfig.PerCallLimit,
		environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()), apiextensionscel.NewExpressionsEnvLoader())
	if err != nil {
		return []Problem{{Path: at, Message: "cannot compile the CEL rules: " + err.Error()}}
	}
	var out []Problem
	for i, r := range results {
		rule := s.XValidations[i].Rule
		switch {
		case r.Error != nil:
			out = append(out, Problem{Path: at, Message: fmt.Sprintf("CEL rule %q: %s", rule, r.Error.Detail)})
		case r.MaxCost > staticCostLimit:
			out = append(out, Problem{Path: at, Message: fmt.Sprintf("CEL rule %q: its estimated cost, %d, is more than the API server allows (%d): bound the lists and strings it reads (maxItems, maxLength)", rule, r.MaxCost, staticCostLimit)})
		}
	}
	return out
}

// checkDefault checks a field's default against the field's own schema.
func (p *parser) checkDefault(s *apiextensionsv1.JSONSchemaProps, at Path) {
	value, err := decode(s.Default.Raw)
	if err != nil {
		p.fail(at, "marker default: "+err.Error())
		return
	}
	bare := s.DeepCopy()
	bare.Default = nil
	bare.XValidations = nil
	in, err := internal(bare)
	if err != nil {
		p.fail(at, "marker default: "+err.Error())
		return
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(in)
	if err != nil {
		p.fail(at, "marker default: "+err.Error())
		return
	}
	for _, e := range apiservervalidation.ValidateCustomResource(nil, value, validator) {
		why := strings.TrimSpace(strings.Replace(e.Detail, "in body", "", 1))
		if why == "" {
			why = e.ErrorBody()
		}
		p.fail(at, fmt.Sprintf("marker default: the default %s does not fit the field: %s", s.Default.Raw, why))
	}
}

// schemaPath matches one step of an API server schema path.
var schemaPath = regexp.MustCompile(`properties\[([^\]]+)\]`)

// fieldProblem turns an error of the API server's schema checks into a problem at the
// field it is about.
func fieldProblem(e *field.Error) Problem {
	var at Path
	for _, m := range schemaPath.FindAllStringSubmatch(e.Field, -1) {
		at = at.key(m[1])
	}
	return Problem{Path: at, Message: e.ErrorBody()}
}
