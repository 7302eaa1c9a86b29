package apischema

import (
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// This file generates the CRD of a definition.

// Conditions names the condition types the rule writes on the resource's objects, for
// the default printer columns; empty for a rule without a status block.
type Conditions struct {
	Ready, Synced string
}

// rootSchema is the schema of a whole object: spec as the block declares it, required
// when a field of it is, else with an empty default, so that the defaults under it apply
// to an object without spec; and status with the block's fields, observedGeneration and
// conditions.
func (d *Definition) rootSchema() *apiextensionsv1.JSONSchemaProps {
	spec := d.spec.DeepCopy()
	var required []string
	switch {
	case len(spec.Required) > 0:
		required = []string{"spec"}
	case len(spec.Properties) > 0:
		spec.Default = &apiextensionsv1.JSON{Raw: []byte("{}")}
	}
	status := d.status.DeepCopy()
	if status.Properties == nil {
		status.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	}
	status.Properties["observedGeneration"] = apiextensionsv1.JSONSchemaProps{
		Type: "integer", Format: "int64", Description: "The metadata.generation of the object that the status describes.",
	}
	status.Properties["conditions"] = conditionsSchema()
	return &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": {Type: "string"},
			"kind":       {Type: "string"},
			"metadata":   {Type: "object"},
			"spec":       *spec,
			"status":     *status,
		},
		Required: required,
	}
}

// conditionsSchema is the schema of metav1.Condition in a list keyed by type, so that
// rules writing conditions on the same object, each with its own field manager, merge.
func conditionsSchema() apiextensionsv1.JSONSchemaProps {
	str := func(desc string) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "string", Description: desc}
	}
	mapType := "map"
	return apiextensionsv1.JSONSchemaProps{
		Type:         "array",
		Description:  "The Ready and Synced conditions kubecel writes, with those of other writers.",
		XListType:    &mapType,
		XListMapKeys: []string{"type"},
		Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
			Type:     "object",
			Required: []string{"type", "status"},
			Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"type":               str("The condition's type, such as Ready."),
				"status":             {Type: "string", Description: "True, False or Unknown.", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"True"`)}, {Raw: []byte(`"False"`)}, {Raw: []byte(`"Unknown"`)}}},
				"observedGeneration": {Type: "integer", Format: "int64"},
				"lastTransitionTime": {Type: "string", Format: "date-time"},
				"reason":             str("Why the condition is so, in CamelCase."),
				"message":            str("What a person should know about it."),
			},
		}},
	}
}

// CRD is the CustomResourceDefinition of the definition: one served and stored version
// with the status subresource, and the printer columns of the block, or by default
// Ready and Synced (when c names them) and Age.
func (d *Definition) CRD(c Conditions) *apiextensionsv1.CustomResourceDefinition {
	scope := apiextensionsv1.NamespaceScoped
	if !d.Namespaced {
		scope = apiextensionsv1.ClusterScoped
	}
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: d.Name()},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: d.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: d.Plural, Singular: strings.ToLower(d.Kind), Kind: d.Kind, ListKind: d.Kind + "List",
				ShortNames: d.ShortNames, Categories: d.Categories,
			},
			Scope: scope,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: d.Version, Served: true, Storage: true,
				Schema:                   &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: d.root.DeepCopy()},
				Subresources:             &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: d.printerColumns(c),
			}},
		},
	}
}

func (d *Definition) printerColumns(c Conditions) []apiextensionsv1.CustomResourceColumnDefinition {
	if len(d.columns) > 0 {
		return append([]apiextensionsv1.CustomResourceColumnDefinition(nil), d.columns...)
	}
	var out []apiextensionsv1.CustomResourceColumnDefinition
	for _, cond := range []struct{ name, typ string }{{"Ready", c.Ready}, {"Synced", c.Synced}} {
		if cond.typ != "" {
			out = append(out, apiextensionsv1.CustomResourceColumnDefinition{
				Name: cond.name, Type: "string", JSONPath: `.status.conditions[?(@.type=="` + cond.typ + `")].status`,
			})
		}
	}
	return append(out, apiextensionsv1.CustomResourceColumnDefinition{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"})
}

// Manifest is a CRD as a manifest to apply: without status and the metadata the API
// server sets.
func Manifest(crd *apiextensionsv1.CustomResourceDefinition) (map[string]any, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		return nil, err
	}
	delete(obj, "status")
	if md, ok := obj["metadata"].(map[string]any); ok {
		for _, k := range []string{"creationTimestamp", "resourceVersion", "uid", "generation", "managedFields"} {
			delete(md, k)
		}
	}
	return obj, nil
}
