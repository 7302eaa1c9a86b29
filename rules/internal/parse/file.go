package parse

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// File decodes one YAML document of a rules file. Every path it records starts with
// root, which tells the documents of a rule set apart. It returns the rules that could
// be read, each with everything that could be read of it, and every problem found.
func File(data []byte, root Path) ([]*Rule, []Problem) {
	jsonData, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, yamlErrors(data, err)
	}
	var doc any
	if err := utiljson.Unmarshal(jsonData, &doc); err != nil {
		return nil, []Problem{{Message: "invalid YAML: " + err.Error()}}
	}
	if doc == nil {
		return nil, []Problem{{Message: "the rules file is empty; it needs apiVersion: " + fileAPIVersion + ", kind: " + fileKind + " and rules"}}
	}
	d := &decoder{}
	at := Where{Path: root}
	top := d.object(doc, at, fileKeys...)
	if top == nil {
		return nil, d.problems
	}
	if v := d.str(top, "apiVersion", at, true); v != "" && v != fileAPIVersion {
		d.fail(at.Key("apiVersion"), fmt.Sprintf("unsupported apiVersion %q; use %s", v, fileAPIVersion))
	}
	if v := d.str(top, "kind", at, true); v != "" && v != fileKind {
		d.fail(at.Key("kind"), fmt.Sprintf("unsupported kind %q; use %s", v, fileKind))
	}
	var out []*Rule
	for i, item := range d.list(top, "rules", at) {
		if r := d.rule(item, root.Key("rules").Index(i)); r != nil {
			out = append(out, r)
		}
	}
	return out, d.problems
}

// RuleAt decodes one rule, already decoded from JSON, found at path at (a stored
// revision). It returns nil when v is not a map.
func RuleAt(v any, at Path) (*Rule, []Problem) {
	d := &decoder{}
	r := d.rule(v, at)
	return r, d.problems
}

// LabelSelector decodes a label selector (an evaluated one, say) strictly: unknown
// fields are an error.
func LabelSelector(v any) (*metav1.LabelSelector, error) {
	d := &decoder{}
	sel := d.selector(v, Where{})
	if len(d.problems) > 0 {
		return nil, errors.New(d.problems[0].Message)
	}
	return sel, nil
}
