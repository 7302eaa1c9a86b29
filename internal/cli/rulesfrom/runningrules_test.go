package rulesfrom

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/rules"
)

// The rules of the tests of the running revisions: web at three texts (v1, v2, v3), and
// api, which shares web's parent resource (so both write prefixed conditions, part of
// their revisions).
func runningRulesText(webData string) string {
	return `apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: web
    parent: {apiVersion: example.com/v1, resource: webs}
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
          data: {v: ` + webData + `}
    status:
      fields: {v: ` + webData + `}
    rollout: {steps: ["50%", "100%"]}
  - name: api
    parent: {apiVersion: example.com/v1, resource: webs}
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-api"}
    status:
      fields: {ok: "yes"}
`
}

// storedRevision is a revision to store: a rule of a text, at a number and state; a
// signer other than the installation's forges it, and hash, when set, replaces the
// rule's own.
type storedRevision struct {
	rule, webData string
	number        int64
	state         rollout.State
	forged        bool
	hash          string
}

// storeRevisions stores revs as the controller does (rollout.Store.Create) and lists
// them back by rule.
func storeRevisions(t *testing.T, id *rules.Identity, revs []storedRevision) (*rollout.Store, map[string][]*rules.Rule) {
	t.Helper()
	other, err := rules.NewIdentity("kubecel", []byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientset()
	compiled := map[string][]*rules.Rule{}
	for _, sr := range revs {
		rs, err := rules.Load([]byte(runningRulesText(sr.webData)), rules.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var r *rules.Rule
		for _, c := range rs.Rules {
			if c.Name == sr.rule {
				r = c
			}
		}
		hash := r.Revision
		if sr.hash != "" {
			hash = sr.hash
		}
		store := &rollout.Store{Client: kube, Namespace: "kubecel-system", Installation: "kubecel", Signer: id}
		if sr.forged {
			store.Signer = other
		}
		if _, err := store.Create(t.Context(), sr.rule, hash, r.Document, rollout.Where{ParentResource: "example.com/v1/webs"}, sr.number, sr.state); err != nil {
			t.Fatal(err)
		}
		compiled[sr.rule] = append(compiled[sr.rule], r)
	}
	return &rollout.Store{Client: kube, Namespace: "kubecel-system", Installation: "kubecel", Signer: id}, compiled
}

func TestRunningRevisions(t *testing.T) {
	id, err := rules.NewIdentity("kubecel", []byte(strings.Repeat("i", 32)))
	if err != nil {
		t.Fatal(err)
	}
	complete := rollout.State{Phase: rollout.Complete}
	api := storedRevision{rule: "api", webData: "v1", number: 1, state: complete}
	tests := []struct {
		name string
		revs []storedRevision
		// From is the index in revs of the revision web's rules run for the parents a
		// rollout has not reached (-1: none); planned that of the one plan evaluates.
		from, planned int
		wantErr       string
	}{{
		name:    "every rule Complete: its current revision",
		revs:    []storedRevision{{rule: "web", webData: "v1", number: 1, state: complete}, {rule: "web", webData: "v2", number: 2, state: complete}, api},
		from:    -1,
		planned: 1,
	}, {
		name:    "a rollout under way: the revision rolled from runs beside the current one",
		revs:    []storedRevision{{rule: "web", webData: "v1", number: 1, state: complete}, {rule: "web", webData: "v2", number: 2, state: rollout.State{Phase: rollout.Progressing, Step: 1, Steps: []float64{50, 100}}}, api},
		from:    0,
		planned: 1,
	}, {
		name:    "rolled back: every parent runs the revision it is held at",
		revs:    []storedRevision{{rule: "web", webData: "v1", number: 1, state: complete}, {rule: "web", webData: "v2", number: 2, state: rollout.State{Phase: rollout.RolledBack, Step: 1, Steps: []float64{50, 100}}}, api},
		from:    0,
		planned: 0,
	}, {
		name:    "a current revision the installation did not store is refused",
		revs:    []storedRevision{{rule: "web", webData: "v1", number: 1, state: complete}, {rule: "web", webData: "v2", number: 2, state: complete, forged: true}, api},
		wantErr: `rule "web": its current revision 2 (` + "%2" + `) in namespace kubecel-system does not carry installation "kubecel"'s proof: it was not stored by this installation (or the identity Secret holds another key), so it is not read as the installation's rules`,
	}, {
		name:    "a revision rolled from that the installation did not store is refused",
		revs:    []storedRevision{{rule: "web", webData: "v1", number: 1, state: complete, forged: true}, {rule: "web", webData: "v2", number: 2, state: rollout.State{Phase: rollout.Paused, Step: 1, Steps: []float64{50, 100}}}, api},
		wantErr: `rule "web": its revision 1 (` + "%1" + `), which revision 2 rolls from, does not carry the installation's proof: it was not stored by this installation, so it is not read as the installation's rules`,
	}, {
		name:    "rolled back to a revision no longer stored",
		revs:    []storedRevision{{rule: "web", webData: "v2", number: 2, state: rollout.State{Phase: rollout.RolledBack, Step: 1, From: "0123456789ab", Steps: []float64{50, 100}}}, api},
		wantErr: `rule "web": revision 2 (%1) was rolled back to revision 0123456789ab, which is no longer stored`,
	}, {
		name:    "a revision that does not compile to its hash here is refused",
		revs:    []storedRevision{{rule: "web", webData: "v1", number: 1, state: complete, hash: "aaaaaaaaaaaa"}, api},
		wantErr: `rule "web": revision 1 (aaaaaaaaaaaa) compiles here as revision %c: `,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.revs[1].state.From == "" && tt.revs[1].state.Phase != rollout.Complete && tt.revs[1].rule == "web" {
				// The second revision of web rolls from the first.
				rs, _ := rules.Load([]byte(runningRulesText(tt.revs[0].webData)), rules.Options{})
				tt.revs[1].state.From = rs.Rules[0].Revision
			}
			store, compiled := storeRevisions(t, id, tt.revs)
			byRule, err := ListRevisions(t.Context(), store)
			if err != nil {
				t.Fatal(err)
			}
			running, docs, err := currentRevisions(store, byRule)
			var rs *rules.RuleSet
			if err == nil {
				rs, err = rules.LoadDocuments(docs, rules.Options{})
				if err != nil {
					t.Fatal(err)
				}
				err = compileStable(rs, running)
			}
			if tt.wantErr != "" {
				web := compiled["web"]
				want := strings.NewReplacer("%1", web[0].Revision, "%2", web[len(web)-1].Revision, "%c", web[0].Revision).Replace(tt.wantErr)
				if err == nil || !strings.HasPrefix(err.Error(), want) {
					t.Fatalf("error:\n got %v\nwant %s...", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			web := compiled["web"]
			l := &Loaded{Set: rs, Running: running}
			got := map[string]string{}
			for _, r := range l.Planned().Rules {
				got[r.Name] = r.Revision
			}
			want := map[string]string{"web": web[tt.planned].Revision, "api": compiled["api"][0].Revision}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("planned revisions (-want +got):\n%s", diff)
			}
			rr := running["web"]
			gotFrom := ""
			if rr.Stable != nil {
				gotFrom = rr.Stable.Revision
			}
			wantFrom := ""
			if tt.from >= 0 {
				wantFrom = web[tt.from].Revision
			}
			if gotFrom != wantFrom {
				t.Errorf("the revision rolled from runs at %q, want %q", gotFrom, wantFrom)
			}
			for _, r := range rs.Rules {
				if want := r.Name + ".kubecel.dev/Ready"; r.ReadyCondition != want {
					t.Errorf("%s's Ready condition is %q, want %q: the revisions do not load together", r.Name, r.ReadyCondition, want)
				}
			}
		})
	}
}

func TestRuleSetOf(t *testing.T) {
	got, err := ruleSetOf([]byte(`{"name":"web","parent":{"apiVersion":"v1","resource":"pods"}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"kubecel.dev/v1alpha1","kind":"RuleSet","rules":[{"name":"web","parent":{"apiVersion":"v1","resource":"pods"}}]}`
	if string(got) != want {
		t.Errorf("ruleSetOf = %s, want %s", got, want)
	}
	if _, err := ruleSetOf([]byte(`["not", "a", "rule"]`)); err == nil || !strings.HasPrefix(err.Error(), "its document is not a rule: ") {
		t.Errorf("ruleSetOf of a list: error %v", err)
	}
}
