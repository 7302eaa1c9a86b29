package examples_test

import (
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// crdSet holds an example's CRDs, checked the way the API server checks them on
// create, and admits parents the way it admits custom resources.
type crdSet struct {
	// byKind holds, per group/version/kind, what admission needs.
	byKind map[schema.GroupVersionKind]*crdVersion
}

type crdVersion struct {
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
	cel        *cel.Validator
}

// loadCRDs reads crd.yaml and fails the test when the API server would reject a CRD.
func loadCRDs(t *testing.T, file string) *crdSet {
	t.Helper()
	set := &crdSet{byKind: map[schema.GroupVersionKind]*crdVersion{}}
	for _, obj := range readObjects(t, file) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, crd, true); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
		internal := &apiextensions.CustomResourceDefinition{}
		if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
			t.Fatalf("%s: convert %s: %v", file, crd.Name, err)
		}
		if errs := crdvalidation.ValidateCustomResourceDefinition(t.Context(), internal); len(errs) > 0 {
			t.Fatalf("%s: the API server would reject CRD %s:\n%v", file, crd.Name, errs.ToAggregate())
		}
		for _, v := range crd.Spec.Versions {
			s := &apiextensions.JSONSchemaProps{}
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, s, nil); err != nil {
				t.Fatalf("%s: convert the schema of %s %s: %v", file, crd.Name, v.Name, err)
			}
			structural, err := structuralschema.NewStructural(s)
			if err != nil {
				t.Fatalf("%s: %s %s: %v", file, crd.Name, v.Name, err)
			}
			validator, _, err := validation.NewSchemaValidator(s)
			if err != nil {
				t.Fatalf("%s: %s %s: %v", file, crd.Name, v.Name, err)
			}
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
			set.byKind[gvk] = &crdVersion{
				structural: structural,
				validator:  validator,
				cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
			}
		}
	}
	if len(set.byKind) == 0 {
		t.Fatalf("%s holds no CustomResourceDefinition", file)
	}
	return set
}

// admit returns the parent as the API server would store it, with the schema's
// defaults, and fails the test when the server would reject it. The parent itself is
// not modified.
func (s *crdSet) admit(t *testing.T, parent map[string]any) map[string]any {
	t.Helper()
	stored := runtime.DeepCopyJSON(parent)
	if errs := s.admission(t, stored); len(errs) > 0 {
		t.Fatalf("the API server would reject %s %s:\n%v", parent["kind"], objectName(parent), errs.ToAggregate())
	}
	return stored
}

// admission applies the schema's defaults to obj, in place, and returns what the API
// server would reject in it: schema violations and x-kubernetes-validations rules.
func (s *crdSet) admission(t *testing.T, obj map[string]any) field.ErrorList {
	t.Helper()
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	v, ok := s.byKind[schema.FromAPIVersionAndKind(apiVersion, kind)]
	if !ok {
		t.Fatalf("no CRD in this example serves %s %s", apiVersion, kind)
	}
	defaulting.Default(obj, v.structural)
	errs := validation.ValidateCustomResource(nil, obj, v.validator)
	celErrs, _ := v.cel.Validate(t.Context(), nil, v.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

// TestCRDsRejectInvalidParents makes sure the admission that TestGallery relies on
// really rejects what the CRDs forbid, so that a sample passing it means something.
func TestCRDsRejectInvalidParents(t *testing.T) {
	tests := []struct {
		name    string
		crd     string
		yaml    string
		wantErr field.ErrorType
	}{
		{
			name: "webapp host without expose",
			crd:  "webapp/crd.yaml",
			yaml: `{apiVersion: example.kubecel.dev/v1, kind: WebApp, metadata: {name: x, namespace: default},
			        spec: {image: nginx, host: x.example.com}}`,
			wantErr: field.ErrorTypeInvalid,
		},
		{
			name: "webapp without image",
			crd:  "webapp/crd.yaml",
			yaml: `{apiVersion: example.kubecel.dev/v1, kind: WebApp, metadata: {name: x, namespace: default},
			        spec: {replicas: 1}}`,
			wantErr: field.ErrorTypeRequired,
		},
		{
			name: "database with a bad storage size",
			crd:  "database/crd.yaml",
			yaml: `{apiVersion: example.kubecel.dev/v1, kind: Database, metadata: {name: x, namespace: default},
			        spec: {passwordSecret: pw, storage: lots}}`,
			wantErr: field.ErrorTypeInvalid,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := loadCRDs(t, tc.crd)
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(tc.yaml), &obj); err != nil {
				t.Fatal(err)
			}
			errs := set.admission(t, runtime.DeepCopyJSON(obj))
			found := false
			for _, e := range errs {
				found = found || e.Type == tc.wantErr
			}
			if !found {
				t.Errorf("errors = %v, want one of type %q", errs, tc.wantErr)
			}
		})
	}
}
