package rules

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	schemacel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// This file does to a custom resource read from a file what the API server does to one
// it is asked to create, with the API server's own libraries: refuse the fields its CRD
// does not declare, apply the CRD's defaults, and validate it against the schema (types,
// required fields, formats, enums, bounds, and the x-kubernetes-validations rules). So
// `kubecel render` and `kubecel test` evaluate rules for a parent as the cluster would
// store it, and a parent the cluster would refuse is an error of that parent, not of the
// expressions that read it.

// admission is what admitting objects of one CRD version needs, built once.
type admission struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	rules      *schemacel.Validator
	err        error // the schema is not structural, so nothing can be admitted
}

// admissions caches the admission of each kind, built on first use.
type admissions struct {
	mu    sync.Mutex
	kinds map[schema.GroupVersionKind]*admission
}

// Admit returns obj as the API server would store it when asked to create it: with the
// defaults of its CRD, and an error saying why the API server would refuse it (fields
// the CRD does not declare, invalid values, missing required fields), naming the object
// and each field. An object whose kind the CRDs do not define is returned as it is. obj
// itself is not changed.
func (s *CRDSchemas) Admit(ctx context.Context, obj map[string]any) (map[string]any, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return obj, nil
	}
	gvk := gv.WithKind(kind)
	a := s.admission(gvk)
	if a == nil {
		return obj, nil
	}
	_, name, _ := metaOf(obj)
	invalid := func(errs field.ErrorList) error {
		return apierrors.NewInvalid(gvk.GroupKind(), name, errs)
	}
	if a.err != nil {
		return obj, fmt.Errorf("the CRD of %s: %w", gvk.GroupKind(), a.err)
	}
	out := runtime.DeepCopyJSON(obj)
	// Strict field validation, as kubectl asks for it: an undeclared field is refused,
	// not pruned.
	if unknown := structuralpruning.PruneWithOptions(out, a.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}); len(unknown) > 0 {
		quoted := make([]string, len(unknown))
		for i, p := range unknown {
			quoted[i] = fmt.Sprintf("unknown field %q", p)
		}
		return obj, fmt.Errorf("%s %q: strict decoding error: %s", gvk.GroupKind(), name, strings.Join(quoted, ", "))
	}
	if err := schemaobjectmeta.Coerce(nil, out, a.structural, true, false); err != nil {
		return obj, invalid(field.ErrorList{err})
	}
	var errs field.ErrorList
	structuraldefaulting.Default(out, a.structural)
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, out, a.validator)...)
	errs = append(errs, schemaobjectmeta.Validate(nil, out, a.structural, true)...)
	if len(errs) == 0 && a.rules != nil {
		ruleErrs, _ := a.rules.Validate(ctx, nil, a.structural, out, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, ruleErrs...)
	}
	if len(errs) > 0 {
		return obj, invalid(errs)
	}
	return out, nil
}

// admission returns the admission of a kind the CRDs define, or nil.
func (s *CRDSchemas) admission(gvk schema.GroupVersionKind) *admission {
	v1 := s.byKind[gvk]
	if v1 == nil {
		return nil
	}
	s.admit.mu.Lock()
	defer s.admit.mu.Unlock()
	if a, ok := s.admit.kinds[gvk]; ok {
		return a
	}
	a := newAdmission(v1)
	if s.admit.kinds == nil {
		s.admit.kinds = map[schema.GroupVersionKind]*admission{}
	}
	s.admit.kinds[gvk] = a
	return a
}

func newAdmission(v1 *apiextensionsv1.JSONSchemaProps) *admission {
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1, internal, nil); err != nil {
		return &admission{err: err}
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		return &admission{err: fmt.Errorf("its schema is not structural: %w", err)}
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		return &admission{err: err}
	}
	return &admission{structural: structural, validator: validator,
		rules: schemacel.NewValidator(structural, true, celconfig.PerCallLimit)}
}
