package parse

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// TestParserReadsYAML11Booleans pins down what the warnings are about: the parser of
// rules files turns these plain scalars into booleans, as keys and as values.
func TestParserReadsYAML11Booleans(t *testing.T) {
	tests := []struct {
		scalar string
		want   string
	}{
		{"y", `{"k":true,"true":"v"}`},
		{"Yes", `{"k":true,"true":"v"}`},
		{"ON", `{"k":true,"true":"v"}`},
		{"n", `{"false":"v","k":false}`},
		{"No", `{"false":"v","k":false}`},
		{"off", `{"false":"v","k":false}`},
		{"'y'", `{"k":"y","y":"v"}`},
		{"!!str n", `{"k":"n","n":"v"}`},
		{"oN", `{"k":"oN","oN":"v"}`},
	}
	for scalar := range yaml11Booleans {
		got, err := yaml.YAMLToJSONStrict([]byte("k: " + scalar + "\n"))
		if err != nil || (string(got) != `{"k":true}` && string(got) != `{"k":false}`) {
			t.Errorf("%s is read as %s (%v), not a boolean", scalar, got, err)
		}
	}
	for _, tt := range tests {
		got, err := yaml.YAMLToJSONStrict([]byte("k: " + tt.scalar + "\n" + tt.scalar + ": v\n"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("%s: got %s, want %s", tt.scalar, got, tt.want)
		}
	}
}
func TestBooleanWarningsPlaces(t *testing.T) {
	data := `apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
- name: web
  parent: {resource: x}
  yes: 1
  children:
  - id: cm
    template:
      data: {a: off, b: "off", list: [N, "N"]}
  - id: other
    expr: "no"
`
	got := BooleanWarnings([]byte(data))
	want := []Problem{
		{At: Where{Rule: "web", Field: "yes", Path: "rules[0].yes"}, Line: 6, Message: `the key yes is read as the boolean "true" by YAML 1.1; quote it ("yes") if you meant the string`},
		{At: Where{Rule: "web", Child: "cm", Field: "template.data.a", Path: "rules[0].children[0].template.data.a"}, Line: 10, Message: `the value off is read as the boolean false by YAML 1.1; quote it ("off") if you meant the string`},
		{At: Where{Rule: "web", Child: "cm", Field: "template.data.list[0]", Path: "rules[0].children[0].template.data.list[0]"}, Line: 10, Message: `the value N is read as the boolean false by YAML 1.1; quote it ("N") if you meant the string`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("BooleanWarnings() mismatch (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"", "a: [", strings.Repeat("[", 300) + strings.Repeat("]", 300)} {
		if got := BooleanWarnings([]byte(bad)); got != nil {
			t.Errorf("BooleanWarnings(%.20q) = %v, want none", bad, got)
		}
	}
}
