package apischema

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// block decodes an api block written in YAML.
func block(t *testing.T, src string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yamlUnmarshal(src, &m); err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return m
}

// withSpec is an api block whose spec is the given YAML (indented by the caller).
func withSpec(spec string) string {
	return "group: t.example.com\nversion: v1\nkind: Thing\n" + spec
}

// specField parses a block with one spec field f and returns f's schema and whether
// it is required.
func specField(t *testing.T, typ string) (*apiextensionsv1.JSONSchemaProps, bool) {
	t.Helper()
	m := block(t, withSpec(""))
	m["spec"] = map[string]any{"f": typ}
	d, problems := Parse(m)
	if len(problems) > 0 {
		t.Fatalf("Parse(%q): %v", typ, problems)
	}
	f := d.spec.Properties["f"]
	return &f, len(d.spec.Required) == 1 && d.spec.Required[0] == "f"
}

func schemaOf(t *testing.T, src string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	var s apiextensionsv1.JSONSchemaProps
	if err := yaml.Unmarshal([]byte(src), &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func TestTypes(t *testing.T) {
	for _, tc := range []struct{ typ, want string }{
		{"string", "type: string"},
		{"integer", "type: integer"},
		{"number", "type: number"},
		{"float", "type: number"},
		{"boolean", "type: boolean"},
		{"object", "type: object\nx-kubernetes-preserve-unknown-fields: true"},
		{"[]string", "type: array\nitems: {type: string}"},
		{"[][]integer", "type: array\nitems: {type: array, items: {type: integer}}"},
		{"map[string]string", "type: object\nadditionalProperties: {type: string}"},
		{"map[string][]boolean", "type: object\nadditionalProperties: {type: array, items: {type: boolean}}"},
		{"[]map[string]number", "type: array\nitems: {type: object, additionalProperties: {type: number}}"},
		{"  string  ", "type: string"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			got, _ := specField(t, tc.typ)
			if diff := cmp.Diff(schemaOf(t, tc.want), got); diff != "" {
				t.Errorf("schema (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNestedAndNamedTypes(t *testing.T) {
	m := block(t, withSpec(`spec:
  ingress:
    enabled: boolean | default=false
    host: string | required=true
  people: "[]Person | minItems=1"
  boss: Person
types:
  Person:
    name: string | required=true
    address: Address
  Address:
    city: string
  Port: integer | minimum=1
`))
	d, problems := Parse(m)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	want := schemaOf(t, `type: object
properties:
  boss: &person
    type: object
    required: [name]
    properties:
      name: {type: string}
      address: {type: object, properties: {city: {type: string}}}
  people: {type: array, minItems: 1, items: *person}
  ingress:
    type: object
    required: [host]
    properties:
      enabled: {type: boolean, default: false}
      host: {type: string}
`)
	if diff := cmp.Diff(want, d.spec); diff != "" {
		t.Errorf("spec schema (-want +got):\n%s", diff)
	}
}

// yamlUnmarshal decodes YAML as package rules does: integers as int64.
func yamlUnmarshal(src string, v any) error {
	js, err := yaml.YAMLToJSON([]byte(src))
	if err != nil {
		return err
	}
	return utiljson.Unmarshal(js, v)
}
