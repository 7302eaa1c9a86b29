package apischema

import (
	"context"
	"errors"
	"fmt"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apiextensionscel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// Admitted is an object as the API server would store it.
type Admitted struct {
	Object map[string]any
	// Dropped lists the fields the API server would drop, as it does not know them
	// (spec.replcas).
	Dropped []string
}

// Admit does to an object of the resource what the API server does before it stores
// it: it drops the fields the schema does not declare, applies the defaults, and
// validates the result (types, required fields, enums, bounds, and the CEL rules that
// do not compare with an old object). The error lists every field the API server would
// refuse. obj is not changed.
func (d *Definition) Admit(obj map[string]any) (*Admitted, error) {
	st, err := structural(d.root)
	if err != nil {
		return nil, err
	}
	u := runtime.DeepCopyJSON(obj)
	dropped := pruning.PruneWithOptions(u, st, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	defaulting.Default(u, st)
	in, err := internal(d.root)
	if err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(in)
	if err != nil {
		return nil, err
	}
	errs := apiservervalidation.ValidateCustomResource(nil, u, validator)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, st, u)...)
	celErrs, _ := apiextensionscel.NewValidator(st, true, celconfig.PerCallLimit).Validate(context.Background(), nil, st, u, nil, celconfig.RuntimeCELCostBudget)
	errs = append(errs, celErrs...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("the API server would refuse it: %s", fieldErrors(errs))
	}
	return &Admitted{Object: u, Dropped: dropped}, nil
}

// decode reads JSON with integers as int64, as objects are read elsewhere.
func decode(raw []byte) (any, error) {
	var v any
	if err := utiljson.Unmarshal(raw, &v); err != nil {
		return nil, errors.New("not JSON: " + err.Error())
	}
	return v, nil
}

// fieldErrors joins errors of the API server's validation, for messages.
func fieldErrors(errs field.ErrorList) string {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}
