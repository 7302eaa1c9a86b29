package rules

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// limitRule has two plain children and a forEach over parent.spec.items whose template
// fails on every element: an error about an element shows that it was evaluated.
const limitRule = `- name: big
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: first
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: first}}
  - id: second
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: second}}
  - id: cms
    forEach: parent.spec.items
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${each.name}"}}
`

func items(n int) map[string]any {
	list := make([]any, n)
	for i := range list {
		list[i] = int64(i)
	}
	return webApp(map[string]any{"items": list})
}

func TestEvaluateLimitsChildren(t *testing.T) {
	tests := []struct {
		name    string
		rule    string
		opts    Options
		items   int
		want    *LimitError
		message string
	}{
		{
			name:    "a forEach over the default limit is refused before any element",
			rule:    limitRule,
			items:   10_000,
			want:    &LimitError{Rule: "big", Child: "cms", Count: 10_000, Limit: DefaultMaxChildren},
			message: `rule "big" child "cms": forEach yields 10000 elements, over the limit of 1000 children per parent (set maxChildren on the rule to change it)`,
		},
		{
			name:    "the total counts every child",
			rule:    limitRule + "  maxChildren: 4\n",
			items:   3,
			want:    &LimitError{Rule: "big", Count: 5, Limit: 4},
			message: `rule "big": 5 children for one parent, over the limit of 4 (maxChildren)`,
		},
		{
			name:    "plain children count too",
			rule:    limitRule + "  maxChildren: 1\n",
			want:    &LimitError{Rule: "big", Count: 2, Limit: 1},
			message: `rule "big": 2 children for one parent, over the limit of 1 (maxChildren)`,
		},
		{
			name:    "the options set the limit of rules that set none",
			rule:    limitRule,
			opts:    Options{MaxChildren: 5},
			items:   6,
			want:    &LimitError{Rule: "big", Child: "cms", Count: 6, Limit: 5},
			message: `rule "big" child "cms": forEach yields 6 elements, over the limit of 5 children per parent (set maxChildren on the rule to change it)`,
		},
		{
			name: "a limit of one",
			rule: `- name: big
  parent: {apiVersion: example.com/v1, resource: webapps}
  maxChildren: 1
  children:
  - id: cms
    forEach: parent.spec.items
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${each.name}"}}
`,
			items:   2,
			want:    &LimitError{Rule: "big", Child: "cms", Count: 2, Limit: 1},
			message: `rule "big" child "cms": forEach yields 2 elements, over the limit of 1 child per parent (set maxChildren on the rule to change it)`,
		},
		{
			name:    "the rule's maxChildren wins over the options",
			rule:    limitRule + "  maxChildren: 10\n",
			opts:    Options{MaxChildren: 5},
			items:   6,
			message: "no such key: name", // every element is evaluated (and fails)
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := loadRule(t, tt.rule, tt.opts)
			res, err := r.Evaluate(t.Context(), items(tt.items), nil)
			var got *LimitError
			if !errors.As(err, &got) {
				got = nil
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("LimitError (-want +got):\n%s\nerror: %.300v", diff, err)
			}
			if tt.want != nil && res != nil {
				t.Errorf("Result = %+v, want nil with a LimitError", res)
			}
			var list ErrorList
			switch {
			case tt.want != nil && err.Error() != tt.message:
				t.Errorf("message = %s\nwant      %s", err, tt.message)
			case tt.want == nil && (!errors.As(err, &list) || len(list) != tt.items || !strings.Contains(list[0].Message, tt.message)):
				t.Errorf("want %d element errors %q, got %.300v", tt.items, tt.message, err)
			}
		})
	}
}

func TestEvaluateWithinTheLimit(t *testing.T) {
	r := loadRule(t, limitRule+"  maxChildren: 5\n", Options{})
	parent := webApp(map[string]any{"items": []any{
		map[string]any{"name": "a"}, map[string]any{"name": "b"}, map[string]any{"name": "c"},
	}})
	res, err := r.Evaluate(t.Context(), parent, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Children) != 5 {
		t.Errorf("got %d children, want 5", len(res.Children))
	}
}

func TestLoadMaxChildrenAndAdopt(t *testing.T) {
	const rule = `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: cm
    adopt: true
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
  - id: other
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: other}}
`
	type view struct {
		MaxChildren int
		Adopt       []bool
	}
	tests := []struct {
		name string
		rule string
		opts Options
		want view
	}{
		{name: "default", rule: rule, want: view{MaxChildren: 1000, Adopt: []bool{true, false}}},
		{name: "from the options", rule: rule, opts: Options{MaxChildren: 50}, want: view{MaxChildren: 50, Adopt: []bool{true, false}}},
		{name: "from the rule", rule: rule + "  maxChildren: 7\n", opts: Options{MaxChildren: 50}, want: view{MaxChildren: 7, Adopt: []bool{true, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := loadRule(t, tt.rule, tt.opts)
			got := view{MaxChildren: r.MaxChildren}
			for _, c := range r.Children {
				got.Adopt = append(got.Adopt, c.Adopt)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	// Both are part of the fingerprint, whether the rule or the options set them.
	fingerprints := map[string]string{}
	for name, r := range map[string]*Rule{
		"as is":           loadRule(t, rule, Options{}),
		"without adopt":   loadRule(t, strings.Replace(rule, "    adopt: true\n", "", 1), Options{}),
		"maxChildren: 7":  loadRule(t, rule+"  maxChildren: 7\n", Options{}),
		"options 7":       loadRule(t, rule, Options{MaxChildren: 7}),
		"options default": loadRule(t, rule, Options{MaxChildren: DefaultMaxChildren}),
	} {
		fingerprints[name] = r.Fingerprint
	}
	if fingerprints["as is"] != fingerprints["options default"] {
		t.Error("setting the default limit in the options changed the fingerprint")
	}
	for _, name := range []string{"without adopt", "maxChildren: 7", "options 7"} {
		if fingerprints[name] == fingerprints["as is"] {
			t.Errorf("%s: the fingerprint did not change", name)
		}
	}
}

func TestLoadMaxChildrenAndAdoptErrors(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  []errView
	}{
		{name: "zero", value: "maxChildren: 0", want: []errView{{Line: 7, Rule: "web", Field: "maxChildren", Message: "must be a positive integer, not 0"}}},
		{name: "negative", value: "maxChildren: -3", want: []errView{{Line: 7, Rule: "web", Field: "maxChildren", Message: "must be a positive integer, not -3"}}},
		{name: "fraction", value: "maxChildren: 1.5", want: []errView{{Line: 7, Rule: "web", Field: "maxChildren", Message: "must be a positive integer, not a number"}}},
		{name: "string", value: `maxChildren: "10"`, want: []errView{{Line: 7, Rule: "web", Field: "maxChildren", Message: "must be a positive integer, not a string"}}},
		{name: "misspelt", value: "maxChildrens: 10", want: []errView{{Line: 7, Rule: "web", Field: "maxChildrens", Message: "unknown field (did you mean 'maxChildren'?)"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(ruleFile(`- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  status: {fields: {a: "1"}}
  `+tt.value+"\n"), Options{})
			if diff := cmp.Diff(tt.want, viewErrors(t, err, tt.want)); diff != "" {
				t.Errorf("Load() errors (-want +got):\n%s", diff)
			}
		})
	}
	_, err := Load(ruleFile(`- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: cm
    adopt: "true"
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
`), Options{})
	want := []errView{{Line: 8, Rule: "web", Child: "cm", Field: "adopt", Message: "must be true or false, not a string"}}
	if diff := cmp.Diff(want, viewErrors(t, err, want)); diff != "" {
		t.Errorf("Load() errors (-want +got):\n%s", diff)
	}
}
