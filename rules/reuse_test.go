package rules

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// numbered is a rule writing status on ConfigMaps' parents of the webapp CRD
// (testdata/crds), named thing<i>, with a data value.
func numbered(i int, value string) string {
	return fmt.Sprintf(`  - name: thing%d
    parent: {apiVersion: example.com/v1, resource: webapps}
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-%d"}
          data: {value: %q, image: "${parent.spec.image}"}
`, i, i, value)
}

// withStatus is numbered with a status block.
func withStatus(i int, value string) string {
	return numbered(i, value) + fmt.Sprintf("    status:\n      fields:\n        f%d: ${parent.spec.image}\n", i)
}

// ruleView is what a load decides of a rule, for comparing a reload that took rules over
// with a load from scratch.
type ruleView struct {
	Name, Source, Origin, Fingerprint, Revision, Ready, Synced string
	MaxChildren                                                int
	HasStatus                                                  bool
	Document                                                   string
}

func viewRules(rs *RuleSet) []ruleView {
	var out []ruleView
	for _, r := range rs.Rules {
		out = append(out, ruleView{r.Name, r.Source, r.Origin, r.Fingerprint, r.Revision, r.ReadyCondition, r.SyncedCondition, r.MaxChildren, r.HasStatus, string(r.Document)})
	}
	return out
}

// TestReloadTakesOverUnchangedRules loads a rule set, then loads an edit of it with the
// first as Options.Previous: the rules whose compilation reads nothing that changed are
// taken over (their compiled children are the same objects), every other one is
// compiled again, and the result is what a load without Previous gives.
func TestReloadTakesOverUnchangedRules(t *testing.T) {
	crds, err := ReadCRDDir("testdata/crds")
	if err != nil {
		t.Fatal(err)
	}
	schemas := SchemasFromCRDs(crds...)
	// changedWebapp is the webapp CRD with another field in its schema.
	changedWebapp := crds[0].DeepCopy()
	props := changedWebapp.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	props.Properties["extra"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	changedWebapp.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = props
	// onNamespaces is a rule whose kinds are all built in.
	onNamespaces := `  - name: namespaced
    parent: {apiVersion: v1, resource: namespaces}
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}", namespace: default}
`
	first := []string{numbered(0, "a"), numbered(1, "b"), numbered(2, "c")}
	tests := []struct {
		name string
		// before is the first load's rules (first when nil).
		before []string
		// docs is the reload's rules, opts its Options (schemas unless changed).
		docs []string
		opts func(Options) Options
		// taken lists, by rule name, whether the reload takes the rule over.
		taken map[string]bool
	}{
		{"nothing changed", nil, first, nil, map[string]bool{"thing0": true, "thing1": true, "thing2": true}},
		{"one rule edited", nil, []string{numbered(0, "a"), numbered(1, "edited"), numbered(2, "c")}, nil,
			map[string]bool{"thing0": true, "thing1": false, "thing2": true}},
		{"a rule moved", nil, []string{numbered(0, "a"), numbered(2, "c"), numbered(1, "b")}, nil,
			map[string]bool{"thing0": true, "thing1": false, "thing2": false}},
		{"a rule removed at the end", nil, []string{numbered(0, "a"), numbered(1, "b")}, nil,
			map[string]bool{"thing0": true, "thing1": true}},
		{"another schema source", nil, first, func(o Options) Options { o.Schemas = testSchemas(t); return o },
			map[string]bool{"thing0": false, "thing1": false, "thing2": false}},
		{"another schema source of the same CRD objects", nil, first, func(o Options) Options { o.Schemas = SchemasFromCRDs(crds...); return o },
			map[string]bool{"thing0": true, "thing1": true, "thing2": true}},
		{"the parent's CRD changed", append(first[:2:2], onNamespaces), append(first[:2:2], onNamespaces),
			func(o Options) Options { o.Schemas = SchemasFromCRDs(changedWebapp); return o },
			map[string]bool{"thing0": false, "thing1": false, "namespaced": true}},
		{"another limit", nil, first, func(o Options) Options { o.MaxChildren = 7; return o },
			map[string]bool{"thing0": false, "thing1": false, "thing2": false}},
		{"another cost limit", nil, first, func(o Options) Options { o.CostLimit = 1e9; return o },
			map[string]bool{"thing0": false, "thing1": false, "thing2": false}},
		{"a second status writer changes the conditions of the first", []string{withStatus(0, "a"), numbered(1, "b")},
			[]string{withStatus(0, "a"), numbered(1, "b"), withStatus(2, "c")}, nil,
			map[string]bool{"thing0": true, "thing1": true, "thing2": false}},
		{"a rule defining an API appears", nil, append(first[:3:3], strings.Replace(websiteRule, "name: website", "name: thing3", 1)), nil,
			map[string]bool{"thing0": false, "thing1": false, "thing2": false, "thing3": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Schemas: schemas}
			before := first
			if tt.before != nil {
				before = tt.before
			}
			prev, err := LoadDocuments([]Document{{Data: ruleFile(strings.Join(before, "")), Source: "rules.yaml"}}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if tt.opts != nil {
				opts = tt.opts(opts)
			}
			docs := []Document{{Data: ruleFile(strings.Join(tt.docs, "")), Source: "rules.yaml"}}
			fresh, err := LoadDocuments(docs, opts)
			if err != nil {
				t.Fatal(err)
			}
			opts.Previous = prev
			again, err := LoadDocuments(docs, opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(viewRules(fresh), viewRules(again)); diff != "" {
				t.Errorf("a reload with Previous differs from a load without (-without +with):\n%s", diff)
			}
			if again.opts.Previous != nil {
				t.Error("the rule set keeps the one before it")
			}
			old := map[string]*Rule{}
			for _, r := range prev.Rules {
				old[r.Name] = r
			}
			taken := map[string]bool{}
			for _, r := range again.Rules {
				p := old[r.Name]
				taken[r.Name] = p != nil && len(r.Children) > 0 && r.Children[0] == p.Children[0]
				if p == r {
					t.Errorf("rule %s is the previous set's object, not a copy", r.Name)
				}
			}
			if diff := cmp.Diff(tt.taken, taken); diff != "" {
				t.Errorf("rules taken over (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReloadRecompilesRulesWithWarnings: a rule with load warnings is compiled again, so
// that its warnings name the lines of the file as it is now.
func TestReloadRecompilesRulesWithWarnings(t *testing.T) {
	// A Secret's data copied into a ConfigMap is a warning of the rule.
	warned := numbered(1, "b") + `    refs:
      - {id: creds, apiVersion: v1, kind: Secret, name: creds}
`
	warned = strings.Replace(warned, `image: "${parent.spec.image}"`, `image: "${refs.creds.data.p}"`, 1)
	opts := Options{Schemas: testSchemas(t)}
	prev, err := Load(ruleFile(numbered(0, "a")+warned), opts)
	if err != nil {
		t.Fatal(err)
	}
	// A comment above moves every line down by one.
	opts.Previous = prev
	again, err := Load(ruleFile("  # moved\n"+numbered(0, "a")+warned), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(prev.Warnings) == 0 || len(again.Warnings) != len(prev.Warnings) {
		t.Fatalf("warnings before %v, after %v", prev.Warnings, again.Warnings)
	}
	if got, want := again.Warnings[0].Line, prev.Warnings[0].Line+1; got != want {
		t.Errorf("the warning is on line %d after the edit, want %d", got, want)
	}
	if again.Rules[1].Children[0] == prev.Rules[1].Children[0] {
		t.Error("the rule with a warning was taken over")
	}
	if again.Rules[0].Children[0] != prev.Rules[0].Children[0] {
		t.Error("the rule without warnings was compiled again: its lines moved, but lines are found when a problem is reported, not compiled in")
	}
}

// TestManyRulesCompileInFileOrder loads more rules than parallelFrom, so that they are
// compiled on several goroutines (under the race detector in make test): the rules and
// the problems come in the order of the file.
func TestManyRulesCompileInFileOrder(t *testing.T) {
	var good, bad []string
	for i := range 3 * parallelFrom {
		good = append(good, numbered(i, "v"))
		r := numbered(i, "v")
		if i%7 == 3 {
			r = strings.Replace(r, "${parent.spec.image}", "${parent.spec.image +}", 1)
		}
		bad = append(bad, r)
	}
	rs, err := Load(ruleFile(strings.Join(good, "")), Options{Schemas: testSchemas(t)})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs.Rules {
		if want := fmt.Sprintf("thing%d", i); r.Name != want {
			t.Fatalf("rule %d is %s, want %s", i, r.Name, want)
		}
	}
	_, err = Load(ruleFile(strings.Join(bad, "")), Options{Schemas: testSchemas(t)})
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %v is not an ErrorList", err)
	}
	var got []string
	line := 0
	for _, e := range list {
		got = append(got, e.Rule)
		if e.Line <= line {
			t.Errorf("problem of %s on line %d follows one on line %d", e.Rule, e.Line, line)
		}
		line = e.Line
	}
	if diff := cmp.Diff([]string{"thing3", "thing10", "thing17"}, got); diff != "" {
		t.Errorf("rules with problems (-want +got):\n%s", diff)
	}
}
