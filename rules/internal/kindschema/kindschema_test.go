package kindschema

import (
	"testing"

	"github.com/google/cel-go/cel"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func props(kv ...any) map[string]apiextensionsv1.JSONSchemaProps {
	m := map[string]apiextensionsv1.JSONSchemaProps{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(apiextensionsv1.JSONSchemaProps)
	}
	return m
}

var (
	str   = apiextensionsv1.JSONSchemaProps{Type: "string"}
	integ = apiextensionsv1.JSONSchemaProps{Type: "integer"}
	yes   = true
	// meta stands for ObjectMeta.
	meta = &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props("name", str, "labels", apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &str}})}
	// deployment is a small Deployment-like schema.
	deployment = &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props(
		"spec", apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props(
			"replicas", integ,
			"paused", apiextensionsv1.JSONSchemaProps{Type: "boolean"},
			"port", apiextensionsv1.JSONSchemaProps{XIntOrString: true},
			"ports", apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props("containerPort", integ)}}},
			"free", apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &yes, Properties: props("a", str)},
			"ratio", apiextensionsv1.JSONSchemaProps{Type: "number"},
			"embedded", apiextensionsv1.JSONSchemaProps{Type: "object", XEmbeddedResource: true, Properties: props("spec", str)},
		)},
	)}
)

func TestUnknownField(t *testing.T) {
	root := Object("Deployment", deployment, meta)
	tests := []struct {
		name  string
		place Place
		key   string
		want  string
	}{
		{name: "declared", place: root.Key("spec"), key: "replicas"},
		{name: "resource fields", place: root, key: "apiVersion"},
		{name: "misspelt", place: root.Key("spec"), key: "replica", want: `unknown field (did you mean 'replicas'?): Deployment .spec declares no field "replica", and the API server refuses undeclared fields`},
		{name: "far from any", place: root.Key("spec"), key: "xyzzy", want: `unknown field: Deployment .spec declares no field "xyzzy", and the API server refuses undeclared fields; it declares 'embedded', 'free', 'paused', 'port', 'ports', 'ratio' and 'replicas'`},
		{name: "at the root", place: root, key: "sepc", want: `unknown field (did you mean 'spec'?): Deployment declares no field "sepc", and the API server refuses undeclared fields`},
		{name: "metadata is ObjectMeta", place: root.Key("metadata"), key: "nmae", want: `unknown field (did you mean 'name'?): Deployment .metadata declares no field "nmae", and the API server refuses undeclared fields`},
		{name: "additionalProperties take any key", place: root.Key("metadata").Key("labels"), key: "app"},
		{name: "preserve unknown fields", place: root.Key("spec").Key("free"), key: "b"},
		{name: "list items", place: root.Key("spec").Key("ports").Item(0), key: "containerPrt", want: `unknown field (did you mean 'containerPort'?): Deployment .spec.ports[0] declares no field "containerPrt", and the API server refuses undeclared fields`},
		{name: "embedded resource has kind", place: root.Key("spec").Key("embedded"), key: "kind"},
		{name: "unknown schema", place: Object("Thing", nil, meta), key: "anything"},
		{name: "zero place", place: Place{}, key: "anything"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.place.UnknownField(tt.key); got != tt.want {
				t.Errorf("UnknownField(%q) = %q, want %q", tt.key, got, tt.want)
			}
		})
	}
}

func TestUnknownFieldNamesTheNearestOfMany(t *testing.T) {
	s := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props("alpha", str, "beta", str, "gamma", str, "delta", str, "epsilon", str, "zeta", str, "eta", str, "theta", str, "iota", str)}
	got := Place{Schema: s, Kind: "Greek", At: ".spec"}.UnknownField("omega")
	want := `unknown field: Greek .spec declares no field "omega", and the API server refuses undeclared fields; the nearest of its 9 fields are 'beta', 'eta', 'theta' and 'zeta'`
	if got != want {
		t.Errorf("UnknownField() = %q, want %q", got, want)
	}
}

func TestLiteralMismatch(t *testing.T) {
	spec := Object("Deployment", deployment, meta).Key("spec")
	tests := []struct {
		name  string
		place Place
		v     any
		want  string
	}{
		{name: "integer", place: spec.Key("replicas"), v: int64(3)},
		{name: "quoted integer", place: spec.Key("replicas"), v: "3", want: `Deployment .spec.replicas is an integer, but the template gives the string "3"; write 3 without quotes`},
		{name: "words for an integer", place: spec.Key("replicas"), v: "three", want: `Deployment .spec.replicas is an integer, but the template gives the string "three"`},
		{name: "quoted boolean", place: spec.Key("paused"), v: "true", want: `Deployment .spec.paused is a boolean, but the template gives the string "true"; write true without quotes`},
		{name: "number for a string", place: Object("Deployment", deployment, meta).Key("metadata").Key("name"), v: int64(80), want: `Deployment .metadata.name is a string, but the template gives the number 80; quote it: "80"`},
		{name: "YAML 1.1 boolean for a string", place: Object("Deployment", deployment, meta).Key("metadata").Key("name"), v: true, want: `Deployment .metadata.name is a string, but the template gives the boolean true; quote the value if you meant a string (YAML 1.1 reads y, yes, on, n, no and off as booleans too)`},
		{name: "int or string", place: spec.Key("port"), v: "http"},
		{name: "map for an int or string", place: spec.Key("port"), v: map[string]any{}, want: `Deployment .spec.port is an integer or a string, but the template gives a map`},
		{name: "integer for a number", place: spec.Key("ratio"), v: int64(1)},
		{name: "list for an object", place: spec, v: []any{}, want: `Deployment .spec is an object, but the template gives a list`},
		{name: "null anywhere", place: spec.Key("replicas"), v: nil},
		{name: "unknown schema", place: Place{}, v: "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.place.LiteralMismatch(tt.v); got != tt.want {
				t.Errorf("LiteralMismatch(%#v) = %q, want %q", tt.v, got, tt.want)
			}
		})
	}
}

func TestTypeMismatch(t *testing.T) {
	spec := Object("Deployment", deployment, meta).Key("spec")
	tests := []struct {
		name  string
		place Place
		t     *cel.Type
		want  string
	}{
		{name: "int", place: spec.Key("replicas"), t: cel.IntType},
		{name: "double for an integer", place: spec.Key("replicas"), t: cel.DoubleType},
		{name: "string for an integer", place: spec.Key("replicas"), t: cel.StringType, want: "the expression is of type string, but Deployment .spec.replicas is an integer"},
		{name: "optional of the right type", place: spec.Key("replicas"), t: cel.OptionalType(cel.IntType)},
		{name: "optional of the wrong type", place: spec.Key("replicas"), t: cel.OptionalType(cel.BoolType), want: "the expression is of type bool, but Deployment .spec.replicas is an integer"},
		{name: "dyn", place: spec.Key("replicas"), t: cel.DynType},
		{name: "null", place: spec.Key("replicas"), t: cel.NullType},
		{name: "int or string", place: spec.Key("port"), t: cel.StringType},
		{name: "bool for an int or string", place: spec.Key("port"), t: cel.BoolType, want: "the expression is of type bool, but Deployment .spec.port is an integer or a string"},
		{name: "list", place: spec.Key("ports"), t: cel.ListType(cel.DynType)},
		{name: "map for a list", place: spec.Key("ports"), t: cel.MapType(cel.StringType, cel.DynType), want: "the expression is of type map(string, dyn), but Deployment .spec.ports is an array"},
		{name: "timestamp for a string", place: Object("Deployment", deployment, meta).Key("metadata").Key("name"), t: cel.TimestampType},
		{name: "unknown schema", place: Place{}, t: cel.IntType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.place.TypeMismatch(tt.t); got != tt.want {
				t.Errorf("TypeMismatch(%s) = %q, want %q", tt.t, got, tt.want)
			}
		})
	}
}

func TestArticle(t *testing.T) {
	for in, want := range map[string]string{"integer": "an integer", "object": "an object", "array": "an array", "boolean": "a boolean", "string": "a string", "number": "a number"} {
		if got := Article(in); got != want {
			t.Errorf("Article(%q) = %q, want %q", in, got, want)
		}
	}
}
