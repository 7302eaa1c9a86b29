package rules

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHints covers the common slips whose plain error would not say what to do.
func TestHints(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []errView
	}{
		{
			name: "parent named by kind",
			file: `- name: web
  parent: {apiVersion: example.com/v1, kind: WebApp}
  children:
  - id: cm
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
`,
			want: []errView{
				{Line: 5, Rule: "web", Field: "parent.kind", Message: "unknown field: a parent is named by its resource, the lowercase plural, not its kind: write resource: webapps (check the plural with kubectl api-resources)"},
				{Line: 5, Rule: "web", Field: "parent.resource", Message: "required"},
			},
		},
		{
			name: "optional bool in when",
			file: `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps, when: 'parent.?spec.enabled'}
  children:
  - id: cm
    when: parent.?spec.on
    readyWhen: self.?data.ready
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
`,
			want: []errView{
				{Line: 5, Rule: "web", Field: "parent.when", Expr: "parent.?spec.enabled", Column: 1, Message: "must evaluate to a bool, not optional_type(dyn); add .orValue(false) to read a missing value as false"},
				{Line: 8, Rule: "web", Child: "cm", Field: "when", Expr: "parent.?spec.on", Column: 1, Message: "must evaluate to a bool, not optional_type(dyn); add .orValue(false) to read a missing value as false"},
				{Line: 9, Rule: "web", Child: "cm", Field: "readyWhen", Expr: "self.?data.ready", Column: 1, Message: "must evaluate to a bool, not optional_type(dyn); add .orValue(false) to read a missing value as false"},
			},
		},
		{
			name: "optional in an operator",
			file: `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: cm
    when: parent.?spec.mode == "on"
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
`,
			want: []errView{
				{Line: 8, Rule: "web", Child: "cm", Field: "when", Expr: `parent.?spec.mode == "on"`, Column: 19, Message: "found no matching overload for '_==_' applied to '(optional_type(dyn), string)'; x.?y is an optional: unwrap it with .orValue(default), e.g. .orValue(false) in a condition"},
			},
		},
		{
			name: "duplicate child id cites the first",
			file: `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: cm
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
  - id: other
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}
  - id: cm
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}
`,
			want: []errView{
				{Line: 11, Rule: "web", Child: "cm", Field: "id", Message: "duplicate child id; ids must be unique in a rule (the first is on line 7)"},
			},
		},
		{
			name: "kro's schema for parent",
			file: `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: cm
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: '${schema.spec.name}'}}
`,
			want: []errView{
				{Line: 8, Rule: "web", Child: "cm", Field: "template.metadata.name", Expr: "${schema.spec.name}", Column: 3, Message: "undeclared reference to 'schema': kubecel names the parent object parent, where kro says schema: write parent.spec.x for schema.spec.x"},
			},
		},
		{
			name: "kro's resource ids for children and refs",
			file: `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  refs:
  - {id: defaults, apiVersion: v1, kind: ConfigMap, name: defaults}
  children:
  - id: deployment
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
  - id: cm
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: b}, data: {a: '${deployment.metadata.name}', b: '${defaults.data.b}'}}
`,
			want: []errView{
				{Line: 12, Rule: "web", Child: "cm", Field: "template.data.a", Expr: "${deployment.metadata.name}", Column: 3, Message: "undeclared reference to 'deployment': deployment is a child of this rule: read it as children.deployment"},
				{Line: 12, Rule: "web", Child: "cm", Field: "template.data.b", Expr: "${defaults.data.b}", Column: 3, Message: "undeclared reference to 'defaults': defaults is a ref of this rule: read it as refs.defaults"},
			},
		},
		{
			name: "tab in the indentation",
			file: "- name: web\n  parent:\n\tapiVersion: v1\n",
			want: []errView{{Line: 6, Message: "invalid YAML: tab character; YAML indents with spaces"}},
		},
		{
			name: "misindented key",
			file: "- name: web\n  parent:\n    apiVersion: v1\n   resource: configmaps\n",
			want: []errView{{Line: 7, Message: "invalid YAML: this line is indented by 3 spaces, between the keys at 2 and at 4 spaces above it: the keys of one map must line up, indented with spaces"}},
		},
		{
			name: "key indented less than its siblings, deeper than its parent",
			file: "- name: web\n  parent:\n    apiVersion: v1\n    resource: configmaps\n  children:\n    - id: a\n      template:\n        apiVersion: v1\n        metadata:\n          name: a\n       kind: ConfigMap\n",
			want: []errView{{Line: 14, Message: "invalid YAML: this line is indented by 7 spaces, between the keys at 6 and at 8 spaces above it: the keys of one map must line up, indented with spaces"}},
		},
		{
			name: "unquoted value with a colon",
			file: "- name: web\n  parent: {apiVersion: v1, resource: configmaps}\n  children:\n    - id: a\n      template:\n        apiVersion: v1\n        kind: ConfigMap\n        metadata: {name: a}\n        data:\n          greeting: ${parent.metadata.name + ': x'}\n",
			want: []errView{{Line: 13, Message: `invalid YAML: the value of greeting holds ": ", which YAML reads as another key: quote this value (greeting: "${parent.metadata.name + ': x'}")`}},
		},
		{
			name: "unquoted value with a colon and double quotes",
			file: "- name: web\n  parent: {apiVersion: v1, resource: configmaps}\n  children:\n    - id: a\n      template:\n        apiVersion: v1\n        kind: ConfigMap\n        metadata: {name: a}\n        data:\n          greeting: ${\"a: \" + parent.metadata.name}\n",
			want: []errView{{Line: 13, Message: `invalid YAML: the value of greeting holds ": ", which YAML reads as another key: quote this value (greeting: '${"a: " + parent.metadata.name}')`}},
		},
		{
			name: "key indented under a scalar",
			file: "- name: web\n  parent: x\n     resource: configmaps\n",
			want: []errView{{Line: 6, Message: "invalid YAML: mapping values are not allowed in this context (bad indentation near line 6? the keys of one map must line up, indented with spaces)"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(ruleFile(tt.file), Options{})
			if diff := cmp.Diff(tt.want, viewErrors(t, err, tt.want)); diff != "" {
				t.Errorf("Load() errors (-want +got):\n%s", diff)
			}
		})
	}
}
