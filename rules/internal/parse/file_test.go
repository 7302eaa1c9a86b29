package parse

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

const header = "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n"

func TestFileReadsEveryBlock(t *testing.T) {
	data := header + `
- name: web
  maxChildren: 5
  parent:
    apiVersion: example.com/v1
    resource: webapps
    namespaces: [a, b]
    selector: {matchLabels: {tier: front}}
    when: parent.spec.enabled
  refs:
  - {id: cfg, apiVersion: v1, kind: ConfigMap, name: "${parent.metadata.name}", optional: true}
  - {id: all, apiVersion: v1, kind: Secret, selector: {matchLabels: {app: x}}, sensitive: true, crossNamespace: true}
  children:
  - id: svc
    template: {apiVersion: v1, kind: Service}
    readyWhen: "true"
    lifecycle: {onRemove: Keep}
  - id: cms
    forEach: parent.spec.items
    expr: '{"apiVersion": "v1"}'
    when: "true"
    adopt: true
    crossNamespace: true
  status:
    fields: {url: "${parent.metadata.name}"}
  rollout:
    steps: ["10%", "50%"]
    pause: 1m
    onFailure: Rollback
    canaries: {namespaces: [canary], selector: {matchLabels: {ring: "0"}}}
`
	rules, problems := File([]byte(data), Root(1))
	if len(problems) > 0 {
		t.Fatalf("File() problems: %+v", problems)
	}
	if len(rules) != 1 {
		t.Fatalf("File() = %d rules, want 1", len(rules))
	}
	want := &Rule{
		Name:        "web",
		MaxChildren: 5,
		At:          "#1.rules[0]",
		Parent: Parent{
			APIVersion: "example.com/v1", Resource: "webapps", Namespaces: []string{"a", "b"},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}, When: "parent.spec.enabled",
		},
		Refs: []*Ref{
			{ID: "cfg", APIVersion: "v1", Kind: "ConfigMap", Name: "${parent.metadata.name}", Optional: true, At: "#1.rules[0].refs[0]"},
			{ID: "all", APIVersion: "v1", Kind: "Secret", Selector: map[string]any{"matchLabels": map[string]any{"app": "x"}}, Sensitive: true, CrossNamespace: true, At: "#1.rules[0].refs[1]"},
		},
		Children: []*Child{
			{ID: "svc", Template: map[string]any{"apiVersion": "v1", "kind": "Service"}, HasTemplate: true, ReadyWhen: "true", Lifecycle: Lifecycle{KeepOnRemove: true}, At: "#1.rules[0].children[0]"},
			{ID: "cms", ForEach: "parent.spec.items", Expr: `{"apiVersion": "v1"}`, When: "true", Adopt: true, CrossNamespace: true, At: "#1.rules[0].children[1]"},
		},
		Status:  &Status{Fields: map[string]any{"url": "${parent.metadata.name}"}},
		Rollout: &Rollout{Steps: []float64{10, 50, 100}, Pause: time.Minute, OnFailure: "Rollback", Canaries: &Canaries{Namespaces: []string{"canary"}, Selector: labels.SelectorFromSet(labels.Set{"ring": "0"})}},
	}
	got := rules[0]
	if got.Fingerprint == "" || got.Revision == "" || got.Fingerprint == got.Revision || len(got.Document) == 0 {
		t.Errorf("Document, Fingerprint, Revision = %d bytes, %q, %q; want a document and two different hashes (the revision leaves rollout out)", len(got.Document), got.Fingerprint, got.Revision)
	}
	opts := cmp.Options{
		cmpopts.IgnoreFields(Rule{}, "Document", "Fingerprint", "Revision"),
		cmp.Comparer(func(a, b labels.Selector) bool { return a.String() == b.String() }),
	}
	if diff := cmp.Diff(want, got, opts); diff != "" {
		t.Errorf("File() rule mismatch (-want +got):\n%s", diff)
	}
}

// problem is a Problem in short: the full path, and the message.
type problem struct {
	Path, Rule, Child, Ref, Field, Message string
	Line                                   int
}

func TestFileProblems(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []problem
	}{
		{
			name: "not YAML",
			data: "rules:\n  - a: b\n\tc: d\n",
			want: []problem{{Line: 3, Message: "invalid YAML: tab character; YAML indents with spaces"}},
		},
		{
			name: "empty",
			data: "# nothing\n",
			want: []problem{{Message: "the rules file is empty; it needs apiVersion: kubecel.dev/v1alpha1, kind: RuleSet and rules"}},
		},
		{
			name: "wrong header",
			data: "apiVersion: v2\nkind: RuleSets\nrulez: []\n",
			want: []problem{
				{Path: "#0.rulez", Field: "rulez", Message: "unknown field (did you mean 'rules'?)"},
				{Path: "#0.apiVersion", Field: "apiVersion", Message: `unsupported apiVersion "v2"; use kubecel.dev/v1alpha1`},
				{Path: "#0.kind", Field: "kind", Message: `unsupported kind "RuleSets"; use RuleSet`},
			},
		},
		{
			name: "typos and wrong types in a rule",
			data: header + `- name: web
  parent: {apiVersion: v1, kind: ConfigMap, resource: configmaps, namespaces: [1]}
  maxChildren: 0
  children:
  - {id: a, templat: {}, adopt: "yes"}
  - {template: [1]}
  status: {fields: [x]}
`,
			want: []problem{
				{Path: "#0.rules[0].parent.kind", Rule: "web", Field: "parent.kind", Message: "unknown field: a parent is named by its resource, the lowercase plural, not its kind: write resource: configmaps (check the plural with kubectl api-resources)"},
				{Path: "#0.rules[0].parent.namespaces[0]", Rule: "web", Field: "parent.namespaces[0]", Message: "must be a string, not a number"},
				{Path: "#0.rules[0].maxChildren", Rule: "web", Field: "maxChildren", Message: "must be a positive integer, not 0"},
				{Path: "#0.rules[0].children[0].templat", Rule: "web", Child: "a", Field: "templat", Message: "unknown field (did you mean 'template'?)"},
				{Path: "#0.rules[0].children[0].adopt", Rule: "web", Child: "a", Field: "adopt", Message: "must be true or false, not a string"},
				{Path: "#0.rules[0].children[1].id", Rule: "web", Field: "id", Message: "required"},
				{Path: "#0.rules[0].children[1].template", Rule: "web", Field: "template", Message: "must be a map (a Kubernetes manifest), not a list"},
				{Path: "#0.rules[0].status.fields", Rule: "web", Field: "status.fields", Message: "must be a map of status field names to values or ${} templates, not a list"},
			},
		},
		{
			name: "refs",
			data: header + `- name: web
  parent: {apiVersion: v1, resource: configmaps}
  refs:
  - {id: a, apiVersion: v1, kind: Secret}
  - {id: b, apiVersion: v1, kind: Secret, name: x, selector: {}}
  - {id: c, apiVersion: v1, kind: Secret, selector: {matchLabels: {a: b}}, optional: true}
  - {id: d, apiVersion: v1, kind: Secret, selector: {matchLabelz: {}}}
`,
			want: []problem{
				{Path: "#0.rules[0].refs[0]", Rule: "web", Ref: "a", Message: "needs a name (one object) or a selector (a list of objects)"},
				{Path: "#0.rules[0].refs[1].selector", Rule: "web", Ref: "b", Field: "selector", Message: "a ref has a name or a selector, not both"},
				{Path: "#0.rules[0].refs[2].optional", Rule: "web", Ref: "c", Field: "optional", Message: "a selector ref is never missing (it reads an empty list): optional applies to a ref by name"},
				{Path: "#0.rules[0].refs[3].selector.matchLabelz", Rule: "web", Ref: "d", Field: "selector.matchLabelz", Message: "unknown field (did you mean 'matchLabels'?)"},
				{Path: "#0.rules[0].refs[3].selector", Rule: "web", Ref: "d", Field: "selector", Message: `invalid label selector: unknown field "matchLabelz"`},
			},
		},
		{
			name: "rollout",
			data: header + `- name: web
  parent: {apiVersion: v1, resource: configmaps}
  rollout:
    steps: ["50%", "10%", "x", 5, "120%"]
    pause: -1m
    progressDeadline: 0s
    onFailure: Retry
    canaries: {}
  children:
  - {id: a, template: {}, lifecycle: {onRemove: Forget}}
`,
			want: []problem{
				{Path: "#0.rules[0].rollout.steps[1]", Rule: "web", Field: "rollout.steps[1]", Message: `must be more than the step before it ("50%"), not "10%"`},
				{Path: "#0.rules[0].rollout.steps[2]", Rule: "web", Field: "rollout.steps[2]", Message: `must be a percent such as "10%", not "x"`},
				{Path: "#0.rules[0].rollout.steps[3]", Rule: "web", Field: "rollout.steps[3]", Message: `must be a percent such as "10%", not a number`},
				{Path: "#0.rules[0].rollout.steps[4]", Rule: "web", Field: "rollout.steps[4]", Message: `must be at most 100%, not "120%"`},
				{Path: "#0.rules[0].rollout.pause", Rule: "web", Field: "rollout.pause", Message: `must not be negative, not "-1m"`},
				{Path: "#0.rules[0].rollout.progressDeadline", Rule: "web", Field: "rollout.progressDeadline", Message: `must be more than 0, not "0s"`},
				{Path: "#0.rules[0].rollout.onFailure", Rule: "web", Field: "rollout.onFailure", Message: `must be Pause or Rollback, not "Retry"`},
				{Path: "#0.rules[0].rollout.canaries", Rule: "web", Field: "rollout.canaries", Message: "name the canaries: namespaces, a selector, or both"},
				{Path: "#0.rules[0].children[0].lifecycle.onRemove", Rule: "web", Child: "a", Field: "lifecycle.onRemove", Message: `must be Delete or Keep, not "Forget"`},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, problems := File([]byte(tt.data), Root(0))
			got := make([]problem, len(problems))
			for i, p := range problems {
				got[i] = problem{Path: string(p.At.Path), Rule: p.At.Rule, Child: p.At.Child, Ref: p.At.Ref, Field: string(p.At.Field), Message: p.Message, Line: p.Line}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("File() problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRuleAt(t *testing.T) {
	r, problems := RuleAt(map[string]any{"name": "web", "api": map[string]any{}, "parent": map[string]any{"resource": "x"}}, Root(2).Key("rules").Index(0))
	if r == nil || r.Name != "web" || r.At != "#2.rules[0]" {
		t.Fatalf("RuleAt() = %+v", r)
	}
	if len(problems) == 0 || !strings.HasPrefix(string(problems[0].At.Path), "#2.rules[0].api") {
		t.Errorf("RuleAt() problems = %+v, want the api block's first", problems)
	}
	if r, _ := RuleAt([]any{}, Root(0)); r != nil {
		t.Errorf("RuleAt(a list) = %+v, want nil", r)
	}
}

func TestLabelSelector(t *testing.T) {
	sel, err := LabelSelector(map[string]any{"matchLabels": map[string]any{"a": "b"}})
	if err != nil || sel.MatchLabels["a"] != "b" {
		t.Errorf("LabelSelector() = %+v, %v", sel, err)
	}
	if _, err := LabelSelector(map[string]any{"matchLabel": map[string]any{}}); err == nil || !strings.Contains(err.Error(), `unknown field "matchLabel"`) {
		t.Errorf("LabelSelector(typo) error = %v, want the unknown field", err)
	}
}
