package apischema

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMarkers(t *testing.T) {
	for _, tc := range []struct {
		name, typ, want string
		required        bool
	}{
		{"required", "string | required=true", "type: string", true},
		{"required false", "string | required=false", "type: string", false},
		{"default string", "string | default=web", "type: string\ndefault: web", false},
		{"default quoted", `string | default="a b"`, "type: string\ndefault: a b", false},
		{"default empty", `string | default=""`, `{type: string, default: ""}`, false},
		{"default integer", "integer | default=3", "type: integer\ndefault: 3", false},
		{"default number", "number | default=0.5", "type: number\ndefault: 0.5", false},
		{"default boolean", "boolean | default=true", "type: boolean\ndefault: true", false},
		{"default list", `[]string | default='["a"]'`, "type: array\nitems: {type: string}\ndefault: [a]", false},
		{"default map", `map[string]integer | default={"a":1}`, "type: object\nadditionalProperties: {type: integer}\ndefault: {a: 1}", false},
		{"required with default", "integer | required=true default=1", "type: integer\ndefault: 1", true},
		{"description", `string | description="The image to run"`, "type: string\ndescription: The image to run", false},
		{"escaped quote", `string | description="say \"hi\" \\ bye"`, `{type: string, description: 'say "hi" \ bye'}`, false},
		{"enum strings", "string | enum=web,api", "type: string\nenum: [web, api]", false},
		{"enum quoted with spaces", `string | enum="debug, info"`, "type: string\nenum: [debug, info]", false},
		{"enum integers", "integer | enum=1,2,3", "type: integer\nenum: [1, 2, 3]", false},
		{"minimum maximum", "integer | minimum=1 maximum=100", "type: integer\nminimum: 1\nmaximum: 100", false},
		{"number bounds", "float | minimum=0.01 maximum=999.99", "type: number\nminimum: 0.01\nmaximum: 999.99", false},
		{"pattern", `string | pattern="^[a-z]+$"`, "type: string\npattern: ^[a-z]+$", false},
		{"lengths", "string | minLength=3 maxLength=15", "type: string\nminLength: 3\nmaxLength: 15", false},
		{"format", "string | format=date-time", "type: string\nformat: date-time", false},
		{"items", "[]string | minItems=1 maxItems=10", "type: array\nitems: {type: string}\nminItems: 1\nmaxItems: 10", false},
		{"uniqueItems", "[]string | uniqueItems=true", "type: array\nitems: {type: string}\nx-kubernetes-list-type: set", false},
		{"uniqueItems false", "[]string | uniqueItems=false", "type: array\nitems: {type: string}", false},
		{"listType atomic", "[]integer | listType=atomic", "type: array\nitems: {type: integer}\nx-kubernetes-list-type: atomic", false},
		{"properties", "map[string]string | minProperties=1 maxProperties=5", "type: object\nadditionalProperties: {type: string}\nminProperties: 1\nmaxProperties: 5", false},
		{"immutable", "string | immutable=true", "type: string\nx-kubernetes-validations: [{rule: self == oldSelf, message: f is immutable}]", false},
		{"immutable false", "string | immutable=false", "type: string", false},
		{"validation", `integer | validation="self % 2 == 0" message="must be even"`, "type: integer\nx-kubernetes-validations: [{rule: self % 2 == 0, message: must be even}]", false},
		{"markers separated by |", "integer | default=1 | minimum=1", "type: integer\ndefault: 1\nminimum: 1", false},
		{"many", `string | required=true immutable=true description="My Name"`, "type: string\ndescription: My Name\nx-kubernetes-validations: [{rule: self == oldSelf, message: f is immutable}]", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, required := specField(t, tc.typ)
			if diff := cmp.Diff(schemaOf(t, tc.want), got); diff != "" {
				t.Errorf("schema of %q (-want +got):\n%s", tc.typ, diff)
			}
			if required != tc.required {
				t.Errorf("required = %v, want %v", required, tc.required)
			}
		})
	}
}

func TestListMap(t *testing.T) {
	d, problems := Parse(block(t, withSpec(`spec:
  ports: "[]Port | listType=map listMapKey=name listMapKey=protocol"
types:
  Port:
    name: string | required=true
    protocol: string | default=TCP
    port: integer | immutable=true
`)))
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	ports := d.spec.Properties["ports"]
	if got := ports.XListMapKeys; !slices.Equal(got, []string{"name", "protocol"}) {
		t.Errorf("list map keys = %v", got)
	}
	if *ports.XListType != "map" {
		t.Errorf("list type = %v", *ports.XListType)
	}
}

// TestProblems checks that each mistake in a block is reported at its field, with a
// message that says what is wrong.
func TestProblems(t *testing.T) {
	for _, tc := range []struct {
		name, block string
		// want holds "path: message part" strings, each of which a problem must contain.
		want []string
	}{
		{"missing names", "spec: {a: string}", []string{"group: required", "version: required", "kind: required"}},
		{"unknown field", withSpec("spec: {a: string}\nspek: {}"), []string{"spek: unknown field (did you mean 'spec'?)"}},
		{"bad group", "group: example\nversion: v1\nkind: Thing", []string{`group: invalid group "example": a CRD's group needs at least one dot`}},
		{"reserved group", "group: apps.k8s.io\nversion: v1\nkind: Thing", []string{"reserved for Kubernetes"}},
		{"bad version", "group: a.example.com\nversion: V1\nkind: Thing", []string{`version: invalid version "V1"`}},
		{"bad kind", "group: a.example.com\nversion: v1\nkind: thing", []string{`kind: invalid kind "thing"`}},
		{"bad plural", withSpec("plural: Things"), []string{`plural: invalid plural "Things"`}},
		{"bad scope", withSpec("scope: Global"), []string{`scope: must be Namespaced or Cluster, not "Global"`}},
		{"unknown type", withSpec("spec: {a: strng}"), []string{`spec.a: unknown type "strng" (did you mean 'string'?)`}},
		{"no type", withSpec("spec: {a: '| required=true'}"), []string{"spec.a: \"| required=true\" has no type"}},
		{"map key", withSpec("spec: {a: 'map[int]string'}"), []string{"spec.a: type \"map[int]string\": map keys are strings"}},
		{"not a type", withSpec("spec: {a: 3}"), []string{"spec.a: must be a type such as string | required=true, or a map of fields, not a number"}},
		{"empty object", withSpec("spec: {a: {}}"), []string{"spec.a: an object needs at least one field"}},
		{"field name", withSpec("spec: {a-b: string}"), []string{`spec.a-b: invalid field name "a-b"`}},
		{"unknown marker", withSpec("spec: {a: string | requried=true}"), []string{`spec.a: unknown marker "requried" (did you mean 'required'?)`}},
		{"marker without value", withSpec("spec: {a: string | required}"), []string{`spec.a: "string | required": marker "required" has no value`}},
		{"unclosed quote", withSpec(`spec: {a: 'string | description="x'}`), []string{"the quoted value has no closing"}},
		{"twice", withSpec("spec: {a: string | minLength=1 minLength=2}"), []string{"spec.a: marker minLength=2: given twice"}},
		{"bad bool", withSpec("spec: {a: string | required=yes}"), []string{"spec.a: marker required=yes: must be true or false"}},
		{"bad default", withSpec("spec: {a: integer | default=one}"), []string{`spec.a: marker default=one: "one" is not an integer`}},
		{"default out of range", withSpec("spec: {a: integer | default=0 minimum=1}"), []string{"spec.a: marker default: the default 0 does not fit the field: should be greater than or equal to 1"}},
		{"default not in enum", withSpec("spec: {a: 'string | default=db enum=web,api'}"), []string{`spec.a: marker default: the default "db" does not fit the field: supported values: "web", "api"`}},
		{"minimum on string", withSpec("spec: {a: string | minimum=1}"), []string{"spec.a: marker minimum=1: only for an integer or a number, and this field is string"}},
		{"bounds crossed", withSpec("spec: {a: integer | minimum=5 maximum=1}"), []string{"minimum is more than maximum"}},
		{"pattern on integer", withSpec("spec: {a: integer | pattern=x}"), []string{"spec.a: marker pattern=x: only for a string"}},
		{"bad pattern", withSpec("spec: {a: 'string | pattern=\"(\"'}"), []string{"not a regular expression"}},
		{"bad format", withSpec("spec: {a: string | format=colour}"), []string{"unknown format"}},
		{"negative count", withSpec("spec: {a: string | minLength=-1}"), []string{"is not a count"}},
		{"items on string", withSpec("spec: {a: string | minItems=1}"), []string{"only for a list"}},
		{"set of objects", withSpec("spec: {a: '[]P | uniqueItems=true'}\ntypes: {P: {x: string}}"), []string{"needs items of a scalar type"}},
		{"listMapKey without map", withSpec("spec: {a: '[]P | listMapKey=x'}\ntypes: {P: {x: string}}"), []string{"marker listMapKey needs listType=map"}},
		{"listMapKey optional", withSpec("spec: {a: '[]P | listType=map listMapKey=x'}\ntypes: {P: {x: string}}"), []string{"listMapKey=x: the key field must be required or have a default"}},
		{"immutable in list", withSpec("spec: {a: '[]P'}\ntypes: {P: {x: string | immutable=true}}"), []string{"types.P.x: marker immutable=true: a field inside a list cannot be immutable"}},
		{"message without rule", withSpec("spec: {a: string | message=x}"), []string{"spec.a: marker message= goes with validation="}},
		{"rule does not compile", withSpec("spec: {a: 'integer | validation=\"self.foo\"'}"), []string{"spec.a: CEL rule \"self.foo\""}},
		{"spec rule does not compile", withSpec("spec: {a: integer}\nvalidation: [{expression: self.b > 1}]"), []string{`spec: CEL rule "self.b > 1"`, "undefined field 'b'"}},
		{"validation entry", withSpec("validation: [{expresion: x}]"), []string{"validation[0].expresion: unknown field (did you mean 'expression'?)", "validation[0].expression: required"}},
		{"required status", withSpec("status: {url: string | required=true}"), []string{"status.url: marker required=true: status fields cannot be required"}},
		{"reserved status", withSpec("status: {conditions: string}"), []string{"status.conditions: reserved"}},
		{"type cycle", withSpec("spec: {a: A}\ntypes: {A: {b: B}, B: {a: A}}"), []string{"types.A: the types refer to each other in a cycle: A -> B -> A"}},
		{"type shadows basic", withSpec("types: {string: {a: integer}}"), []string{`types.string: "string" is a basic type`}},
		{"bad type in unused type", withSpec("types: {A: {b: strin}}"), []string{`types.A.b: unknown type "strin"`}},
		{"bad column", withSpec("printerColumns: [{name: X, type: text, jsonPath: spec.x}]"), []string{"printerColumns[0].type: must be one of", "printerColumns[0].jsonPath: must start with a dot"}},
		{"column missing fields", withSpec("printerColumns: [{name: X}]"), []string{"printerColumns[0].type: required", "printerColumns[0].jsonPath: required"}},
		{"short names", withSpec("shortNames: [Ws]"), []string{"shortNames[0]: must be a lowercase name"}},
		{"not a map", "- a", []string{"must be a map with group, version, kind and spec"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v any
			if err := yamlUnmarshal(tc.block, &v); err != nil {
				t.Fatal(err)
			}
			d, problems := Parse(v)
			if d != nil {
				t.Fatalf("Parse returned a definition for a bad block:\n%s", tc.block)
			}
			var got []string
			for _, p := range problems {
				got = append(got, p.Error())
			}
			for _, want := range tc.want {
				if !slices.ContainsFunc(got, func(g string) bool { return strings.Contains(g, want) }) {
					t.Errorf("no problem contains %q; got:\n%s", want, strings.Join(got, "\n"))
				}
			}
		})
	}
}
