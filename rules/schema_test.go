package rules

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/common/types/traits"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// TestNamedDeclTypesAreTheRenamedOnes checks that the types declType names while
// converting are those the apiserver's MaybeAssignTypeName makes of the unnamed
// conversion, for the schema of every embedded built-in kind and of the test CRDs: the
// names CEL type errors show, the CEL types, the fields and the bounds.
func TestNamedDeclTypesAreTheRenamedOnes(t *testing.T) {
	schemas := map[string]*apiextensionsv1.JSONSchemaProps{}
	for gvk, s := range embedded().byKind {
		schemas[gvk.String()] = s
	}
	crds := testSchemas(t)
	for gvk, s := range crds.byKind {
		schemas[gvk.String()] = s
	}
	if len(schemas) < 40 {
		t.Fatalf("only %d schemas to compare", len(schemas))
	}
	for name, s := range schemas {
		named := declType(s, true, parentTypeName)
		renamed := declType(s, true, "").MaybeAssignTypeName(parentTypeName)
		if diff := declTypeDiff(parentTypeName, renamed, named); diff != "" {
			t.Errorf("%s: %s", name, diff)
		}
	}
}

// TestParentTypesShareTheirMetadata checks that the parent types of two schemas share
// one type of `parent.metadata`, and that a ref's is its own, named by its path.
func TestParentTypesShareTheirMetadata(t *testing.T) {
	a, b := parentDeclType(thingCRD(1, false).Spec.Versions[0].Schema.OpenAPIV3Schema), parentDeclType(thingCRD(2, true).Spec.Versions[0].Schema.OpenAPIV3Schema)
	if a == nil || b == nil {
		t.Fatal("parentDeclType() = nil")
	}
	if a == b || a.Fields["metadata"].Type != b.Fields["metadata"].Type {
		t.Error("two parent types do not share the type of their metadata (or are one type)")
	}
	refs := refsDeclType([]*refSource{{ID: "other", APIVersion: "bench.kubecel.dev/v1", Kind: "Thing1"}}, SchemasFromCRDs(thingCRD(1, false)))
	if refs == nil {
		t.Fatal("refsDeclType() = nil")
	}
	meta := refs.Fields["other"].Type.Fields["metadata"].Type
	if meta == a.Fields["metadata"].Type || meta.TypeName() != "Refs.other.metadata" {
		t.Errorf("a ref's metadata type is %s (shared: %v), want its own Refs.other.metadata", meta.TypeName(), meta == a.Fields["metadata"].Type)
	}
}

// declTypeDiff describes the first difference between two declared types at path, or
// returns "".
func declTypeDiff(path string, want, got *apiservercel.DeclType) string {
	if (want == nil) != (got == nil) {
		return fmt.Sprintf("%s: %v, want %v", path, got, want)
	}
	if want == nil {
		return ""
	}
	type shape struct {
		Name, Cel                   string
		Object, Map, List           bool
		MaxElements, MinSerialized  int64
		Fielder, Indexer, Container bool
		DefaultNil                  bool
	}
	of := func(t *apiservercel.DeclType) shape {
		return shape{
			Name: t.TypeName(), Cel: t.CelType().String(),
			Object: t.IsObject(), Map: t.IsMap(), List: t.IsList(),
			MaxElements: t.MaxElements, MinSerialized: t.MinSerializedSize,
			Fielder: t.HasTrait(traits.FieldTesterType), Indexer: t.HasTrait(traits.IndexerType), Container: t.HasTrait(traits.ContainerType),
			DefaultNil: t.DefaultValue() == nil,
		}
	}
	if w, g := of(want), of(got); w != g {
		return fmt.Sprintf("%s: %+v, want %+v", path, g, w)
	}
	if d := declTypeDiff(path+"[key]", want.KeyType, got.KeyType); d != "" {
		return d
	}
	if d := declTypeDiff(path+"[elem]", want.ElemType, got.ElemType); d != "" {
		return d
	}
	wantNames, gotNames := fieldNames(want), fieldNames(got)
	if !slices.Equal(wantNames, gotNames) {
		return fmt.Sprintf("%s: fields %s, want %s", path, strings.Join(gotNames, ","), strings.Join(wantNames, ","))
	}
	for _, name := range wantNames {
		wf, gf := want.Fields[name], got.Fields[name]
		if wf.Name != gf.Name || wf.Required != gf.Required {
			return fmt.Sprintf("%s.%s: field %+v, want %+v", path, name, *gf, *wf)
		}
		if d := declTypeDiff(path+"."+name, wf.Type, gf.Type); d != "" {
			return d
		}
	}
	return ""
}

// fieldNames lists a type's fields, sorted.
func fieldNames(t *apiservercel.DeclType) []string {
	var out []string
	for name := range t.Fields {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
