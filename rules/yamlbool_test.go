package rules

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBooleanWarnings(t *testing.T) {
	// The child's kind has no schema: where one says the field is a string, the boolean
	// is a load error instead (see TestLiteralsAgainstSchemas).
	const rule = `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: cm
    template:
      apiVersion: example.com/v1
      kind: Settings
      metadata: {name: "${parent.metadata.name}", labels: {enabled: on, quoted: "on"}}
      data:
        n: "north"
        'y': no
        list: [yes, "yes"]
        block: |
          no
        multi: >-
          off
        tagged: !!str off
        word: yesterday
  status:
    fields:
      verbose: yes
`
	rs, err := Load(ruleFile(rule), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []errView{
		{Line: 11, Rule: "web", Child: "cm", Field: "template.metadata.labels.enabled", Message: `the value on is read as the boolean true by YAML 1.1; quote it ("on") if you meant the string`},
		{Line: 13, Rule: "web", Child: "cm", Field: "template.data.n", Message: `the key n is read as the boolean "false" by YAML 1.1; quote it ("n") if you meant the string`},
		{Line: 14, Rule: "web", Child: "cm", Field: "template.data.y", Message: `the value no is read as the boolean false by YAML 1.1; quote it ("no") if you meant the string`},
		{Line: 15, Rule: "web", Child: "cm", Field: "template.data.list[0]", Message: `the value yes is read as the boolean true by YAML 1.1; quote it ("yes") if you meant the string`},
	}
	if diff := cmp.Diff(want, viewErrors(t, ErrorList(rs.Warnings), want)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}

	// Keys anywhere, outside templates too; values outside templates are left alone.
	rs, err = Load(ruleFile(`- name: web
  parent:
    apiVersion: v1
    resource: configmaps
    selector: {matchLabels: {Y: "1"}}
  status:
    fields: {off: "${parent.metadata.name}", on: "x"}
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want = []errView{
		{Line: 8, Rule: "web", Field: "parent.selector.matchLabels.Y", Message: `the key Y is read as the boolean "true" by YAML 1.1; quote it ("Y") if you meant the string`},
		{Line: 10, Rule: "web", Field: "status.fields.off", Message: `the key off is read as the boolean "false" by YAML 1.1; quote it ("off") if you meant the string`},
		{Line: 10, Rule: "web", Field: "status.fields.on", Message: `the key on is read as the boolean "true" by YAML 1.1; quote it ("on") if you meant the string`},
	}
	if diff := cmp.Diff(want, viewErrors(t, ErrorList(rs.Warnings), want)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if got := rs.Rules[0].status; len(got) != 2 || got[0].name != "false" || got[1].name != "true" {
		t.Errorf("status fields %v: the keys are no longer read as booleans; drop the warning", got)
	}
}

func TestNoBooleanWarnings(t *testing.T) {
	for _, file := range []string{"testdata/rules/webapp.yaml"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := Load(data, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs.Warnings) > 0 {
			t.Errorf("%s: %v", file, ErrorList(rs.Warnings))
		}
	}
	if got := booleanWarnings([]byte(strings.Repeat("[", 300) + strings.Repeat("]", 300))); got != nil {
		t.Errorf("deep document: %v", got)
	}
}
