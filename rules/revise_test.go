package rules

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"
)

// webRule is a rule that writes image (a ${} template) into a ConfigMap and the
// parent's status, followed by extra lines (a rollout block, say).
func webRule(image, extra string) string {
	return `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: cm
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${parent.metadata.name}"}
      data: {image: "` + image + `"}
  status:
    fields:
      image: "` + image + `"
` + extra
}

// The same rule as webRule("${parent.spec.image}", ""), laid out otherwise, with
// comments.
const webRuleRelaid = `- # the web rule
  status: {fields: {image: "${parent.spec.image}"}}   # the status
  children:
    - template:
        data:
          image: >-
            ${parent.spec.image}
        metadata:
          name: ${parent.metadata.name}
        kind: ConfigMap
        apiVersion: v1
      id: cm
  parent:
    resource: webapps
    apiVersion: "example.com/v1"
  name: web
`

const (
	image        = "${parent.spec.image}"
	steps        = "  rollout:\n    steps: [10%, 50%]\n    healthy: parents.all(p, has(p.status))\n"
	otherSteps   = "  rollout:\n    steps: [\"1%\"]\n    pause: 1m\n    onFailure: Rollback\n"
	sharedStatus = `- name: other
  parent: {apiVersion: example.com/v1, resource: webapps}
  status: {fields: {phase: "${parent.spec.image}"}}
`
	elsewhere = `- name: other
  parent: {apiVersion: example.com/v1, resource: databases}
  status: {fields: {phase: "x"}}
`
)

var revisionPattern = regexp.MustCompile(`^[0-9a-f]{12}$`)

// TestRevision loads a rule before and after an edit, and checks whether its Revision
// and its Fingerprint changed.
func TestRevision(t *testing.T) {
	tests := []struct {
		name                      string
		before, after             string
		beforeOpts, afterOpts     Options
		sameRevision, sameFingerp bool
	}{
		{name: "nothing", before: webRule(image, ""), after: webRule(image, ""), sameRevision: true, sameFingerp: true},
		{name: "layout, key order and comments", before: webRule(image, ""), after: webRuleRelaid, sameRevision: true, sameFingerp: true},
		{name: "a rollout is added", before: webRule(image, ""), after: webRule(image, steps), sameRevision: true},
		{name: "the rollout changes", before: webRule(image, steps), after: webRule(image, otherSteps), sameRevision: true},
		{name: "the rollout is removed", before: webRule(image, steps), after: webRule(image, ""), sameRevision: true},
		{name: "a template changes", before: webRule(image, ""), after: webRule("${parent.spec.image}:latest", "")},
		{name: "a template changes with the rollout", before: webRule(image, steps), after: webRule("${parent.spec.image}:latest", steps)},
		{name: "maxChildren is set", before: webRule(image, ""), after: webRule(image, "  maxChildren: 5\n")},
		{
			name: "another rule writes the status of the same parents: the condition types change",
			// The rule's own source is the same.
			before: webRule(image, ""), after: webRule(image, "") + sharedStatus,
		},
		{
			name:   "another rule on other parents",
			before: webRule(image, ""), after: webRule(image, "") + elsewhere, sameRevision: true, sameFingerp: true,
		},
		{
			name:   "the default child limit changes",
			before: webRule(image, ""), after: webRule(image, ""), afterOpts: Options{MaxChildren: 7},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := loadRule(t, tt.before, tt.beforeOpts)
			after := loadRule(t, tt.after, tt.afterOpts)
			for _, r := range []*Rule{before, after} {
				if !revisionPattern.MatchString(r.Revision) {
					t.Errorf("Revision %q is not 12 lowercase hex characters", r.Revision)
				}
			}
			if got := before.Revision == after.Revision; got != tt.sameRevision {
				t.Errorf("Revision %s then %s: same = %v, want %v", before.Revision, after.Revision, got, tt.sameRevision)
			}
			if got := before.Fingerprint == after.Fingerprint; got != tt.sameFingerp {
				t.Errorf("Fingerprint %s then %s: same = %v, want %v", before.Fingerprint, after.Fingerprint, got, tt.sameFingerp)
			}
		})
	}
}

// TestDocument checks that a rule's Document is its decoded source, rollout included,
// whatever its layout.
func TestDocument(t *testing.T) {
	var list []any
	src := webRule(image, steps)
	if err := yaml.Unmarshal([]byte(src), &list); err != nil {
		t.Fatal(err)
	}
	r := loadRule(t, src, Options{})
	var got any
	if err := json.Unmarshal(r.Document, &got); err != nil {
		t.Fatalf("Document is not JSON: %v\n%s", err, r.Document)
	}
	if diff := cmp.Diff(list[0], got); diff != "" {
		t.Errorf("Document (-source +document):\n%s", diff)
	}
	plain := loadRule(t, webRule(image, ""), Options{})
	relaid := loadRule(t, webRuleRelaid, Options{})
	if string(plain.Document) != string(relaid.Document) {
		t.Errorf("the Documents of one rule in two layouts differ:\n%s\n%s", plain.Document, relaid.Document)
	}
	if strings.Contains(string(plain.Document), "rollout") || !strings.Contains(string(r.Document), `"rollout":{"healthy":"parents.all(p, has(p.status))","steps":["10%","50%"]}`) {
		t.Errorf("Document without and with a rollout:\n%s\n%s", plain.Document, r.Document)
	}
}

// compareRules fails when two rules differ in what Revise promises to keep.
func compareRules(t *testing.T, want, got *Rule) {
	t.Helper()
	view := func(r *Rule) map[string]any {
		return map[string]any{
			"Name": r.Name, "Source": r.Source, "Origin": r.Origin, "Revision": r.Revision, "Fingerprint": r.Fingerprint,
			"Document": string(r.Document), "ReadyCondition": r.ReadyCondition, "SyncedCondition": r.SyncedCondition,
			"MaxChildren": r.MaxChildren, "Rollout": r.Rollout, "Healthy": r.Rollout.HealthyExpression(),
		}
	}
	if diff := cmp.Diff(view(want), view(got), cmpopts.IgnoreUnexported(Rollout{})); diff != "" {
		t.Errorf("revised rule (-want +got):\n%s", diff)
	}
}

// TestReviseRoundTrip stores a rule's Document, edits the rule, and revises the edited
// rule set back to the stored document: the rule is the one loaded first, and it
// evaluates the same.
func TestReviseRoundTrip(t *testing.T) {
	v1 := loadRule(t, webRule(image, steps), Options{})
	rs2, err := Load(ruleFile(webRule("${parent.spec.image}:latest", otherSteps)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	v2 := rs2.Rules[0]
	got, err := rs2.Revise("web", v1.Document)
	if err != nil {
		t.Fatalf("Revise(): %v", err)
	}
	compareRules(t, v1, got)
	parent := webApp(map[string]any{"image": "nginx"})
	want, err := v1.Evaluate(t.Context(), parent, Observed{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := got.Evaluate(t.Context(), parent, Observed{})
	if err != nil {
		t.Fatalf("Evaluate() of the revised rule: %v", err)
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("the revised rule evaluates otherwise (-stored +revised):\n%s", diff)
	}
	if cm := res.Children[0].Object["data"].(map[string]any)["image"]; cm != "nginx" {
		t.Errorf("the revised rule's ConfigMap holds %v, want the stored revision's nginx", cm)
	}
	for _, parents := range [][]map[string]any{{parent}, {healthyParent("a", 1)}} {
		want, wantErr := v1.Rollout.Healthy(t.Context(), parents)
		healthy, err := got.Rollout.Healthy(t.Context(), parents)
		if healthy != want || (err == nil) != (wantErr == nil) {
			t.Errorf("Healthy() of the revised rule = %v, %v; the stored rule's %v, %v", healthy, err, want, wantErr)
		}
	}
	// The rule set is unchanged.
	if rs2.Rules[0] != v2 || v2.Revision == v1.Revision || len(rs2.Rules) != 1 {
		t.Errorf("Revise changed the rule set: %v", rs2.Rules)
	}
	// Revising to the current document gives the current rule.
	same, err := rs2.Revise("web", v2.Document)
	if err != nil {
		t.Fatal(err)
	}
	compareRules(t, v2, same)
}

// TestReviseWithinTheRuleSet checks that a revision is compiled within the rule set that
// revises it: its conditions, origin and source are those the set decides, as if the set
// were loaded with the stored source.
func TestReviseWithinTheRuleSet(t *testing.T) {
	stored := loadRule(t, webRule(image, steps), Options{})
	tests := []struct {
		name string
		// now is the rule set that revises; with is it holding the stored source.
		now, with []Document
		opts      Options
	}{
		{
			name: "another rule now shares the parents' status",
			now:  []Document{{Data: ruleFile(webRule("x", "") + sharedStatus)}},
			with: []Document{{Data: ruleFile(webRule(image, steps) + sharedStatus)}},
		},
		{
			name: "the rule has been removed",
			now:  []Document{{Data: ruleFile(sharedStatus)}},
			with: []Document{{Data: ruleFile(sharedStatus + webRule(image, steps))}},
		},
		{
			name: "another document and origin",
			now: []Document{
				{Source: "a.yaml", Data: ruleFile(elsewhere)},
				{Source: "team.yaml", Origin: "configmap team/rules", Data: ruleFile(webRule("x", ""))},
			},
			with: []Document{
				{Source: "a.yaml", Data: ruleFile(elsewhere)},
				{Source: "team.yaml", Origin: "configmap team/rules", Data: ruleFile(webRule(image, steps))},
			},
		},
		{
			name: "the Options it was loaded with",
			now:  []Document{{Data: ruleFile(webRule("x", ""))}},
			with: []Document{{Data: ruleFile(webRule(image, steps))}},
			opts: Options{MaxChildren: 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := LoadDocuments(tt.now, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			with, err := LoadDocuments(tt.with, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var want *Rule
			for _, r := range with.Rules {
				if r.Name == "web" {
					want = r
				}
			}
			got, err := rs.Revise("web", stored.Document)
			if err != nil {
				t.Fatalf("Revise(): %v", err)
			}
			compareRules(t, want, got)
			if got.Revision == stored.Revision {
				t.Errorf("the revision %s is the stored one although the rule set decides otherwise about it", got.Revision)
			}
		})
	}
}

// crdWithout writes the test CRDs with the webapps' spec.image removed, and returns
// their schemas.
func crdWithout(t *testing.T) *CRDSchemas {
	t.Helper()
	data, err := os.ReadFile("testdata/crds/webapp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const field = "                image: {type: string}\n"
	if !strings.Contains(string(data), field) {
		t.Fatalf("testdata/crds/webapp.yaml has no %q", field)
	}
	edited := strings.Replace(string(data), field, "", 1)
	edited = strings.Replace(edited, "required: [image]", "required: []", 1)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "webapp.yaml"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := SchemasFromCRDDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReviseErrors(t *testing.T) {
	stored := loadRule(t, webRule(image, steps), Options{})
	other := loadRule(t, sharedStatus, Options{})
	tests := []struct {
		name     string
		set      string
		schemas  func(*testing.T) *CRDSchemas
		rule     string
		document string
		want     []errView
	}{
		{
			name: "not JSON", set: webRule("x", ""), rule: "web", document: `{"name": "web"`,
			want: []errView{{Rule: "web", Message: "the stored revision is not JSON: unexpected end of JSON input"}},
		},
		{
			name: "not a rule", set: webRule("x", ""), rule: "web", document: `["web"]`,
			want: []errView{{Rule: "web", Message: "must be a map, not a list"}},
		},
		{
			name: "another rule's revision", set: webRule("x", ""), rule: "web", document: string(other.Document),
			want: []errView{{Rule: "web", Field: "name", Message: `the stored revision is of rule "other"`}},
		},
		{
			name: "an invalid rule", set: webRule("x", ""), rule: "web", document: `{"name": "web", "children": [], "rollout": {"steps": ["5%", "1%"]}}`,
			want: []errView{
				{Rule: "web", Field: "parent", Message: "required: the resource the rule watches (or api, to define a new one)"},
				{Rule: "web", Field: "rollout.steps[1]", Message: `must be more than the step before it ("5%"), not "1%"`},
				{Rule: "web", Message: "the rule has neither children nor status, so it would do nothing"},
				{Rule: "web", Field: "rollout", Message: rolloutNeedsStatus},
			},
		},
		{
			name: "a CRD field the stored expressions read is gone", set: webRule("x", ""), schemas: crdWithout, rule: "web", document: string(stored.Document),
			want: []errView{
				{Rule: "web", Child: "cm", Field: "template.data.image", Expr: image, Column: 14, Message: "undefined field 'image'"},
				{Rule: "web", Field: "status.fields.image", Expr: image, Column: 14, Message: "undefined field 'image'"},
			},
		},
		{
			name: "another rule now writes a status field of the revision",
			set: "- name: web\n  parent: {apiVersion: example.com/v1, resource: webapps}\n  status: {fields: {url: x}}\n" +
				strings.ReplaceAll(sharedStatus, "phase", "image"),
			rule: "web", document: string(stored.Document),
			want: []errView{{Rule: "other", Field: "status.fields.image", Message: `rules "web" and "other" both write status.image of webapps.example.com; each field may be written by one rule`}},
		},
		{
			name: "an invalid name for a removed rule", set: elsewhere, rule: "Web", document: strings.Replace(string(stored.Document), `"name":"web"`, `"name":"Web"`, 1),
			want: []errView{{Rule: "Web", Field: "name", Message: "invalid rule name: *"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts Options
			if tt.schemas != nil {
				opts.Schemas = tt.schemas(t)
			}
			rs, err := Load(ruleFile(tt.set), opts)
			if err != nil {
				t.Fatal(err)
			}
			r, err := rs.Revise(tt.rule, []byte(tt.document))
			if err == nil {
				t.Fatalf("Revise() = %v, want an error", r)
			}
			if diff := cmp.Diff(tt.want, viewErrors(t, err, tt.want)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReviseConcurrently revises and evaluates health from several goroutines at once
// (run with -race): a RuleSet is shared by the controller's workers.
func TestReviseConcurrently(t *testing.T) {
	stored := loadRule(t, webRule(image, steps), Options{})
	rs, err := Load(ruleFile(webRule("x", "")+sharedStatus), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	revisions := make([]string, 8)
	for i := range revisions {
		wg.Go(func() {
			r, err := rs.Revise("web", stored.Document)
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := r.Rollout.Healthy(t.Context(), []map[string]any{healthyParent("a", 1)}); err != nil {
				t.Error(err)
			}
			revisions[i] = r.Revision
		})
	}
	wg.Wait()
	for _, rev := range revisions[1:] {
		if rev != revisions[0] {
			t.Errorf("revisions differ: %v", revisions)
		}
	}
}
