package trace

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubecel/kubecel/internal/cli/clikit"
)

func TestParseTraceArgs(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    traceTarget
		wantErr string
	}{
		{args: []string{"webapps"}, want: traceTarget{typ: "webapps"}},
		{args: []string{"webapps/shop"}, want: traceTarget{typ: "webapps", name: "shop"}},
		{args: []string{"WebApp", "shop"}, want: traceTarget{typ: "WebApp", name: "shop"}},
		{args: []string{"webapps/shop", "api"}, wantErr: "give TYPE/NAME or TYPE NAME, not both (webapps/shop api)"},
		{args: []string{"webapps/"}, wantErr: `"webapps/": want TYPE/NAME, such as webapps/shop`},
		{args: []string{"a/b/c"}, wantErr: `"a/b/c": want TYPE/NAME, such as webapps/shop`},
	} {
		got, err := parseTraceArgs(tc.args)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%q: error %v, want %s", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
	}
}

// sampleTrace is a parent with two rules: one whose status is of an older generation,
// with a child whose readyWhen spans lines and a selector ref, and one that does not
// select the parent.
func sampleTrace() *traceDoc {
	return &traceDoc{
		Parent: traceObject{APIVersion: "example.com/v1", Kind: "WebApp", Namespace: "team", Name: "shop", Created: "2026-01-01T10:00:00Z", Generation: 3,
			Conditions: []clikit.Condition{{Type: "Ready", Status: "False", Reason: "ChildrenNotReady"}}},
		Rules: []traceRule{{
			Name: "web", Selected: true, WritesStatus: true,
			Ready: &clikit.Condition{Type: "Ready", Status: "False", Reason: "ChildrenNotReady", Message: "not ready: deployment", ObservedGeneration: 2},
			Children: []traceChild{{
				ID: "deployment", APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "shop", State: stateNotReady,
				Message: "readyWhen is false", Expression: "self.status.ready &&\n  true", Created: "2026-01-01T10:01:00Z",
				Conditions: []clikit.Condition{{Type: "Synced", Status: "True"}},
			}},
			Refs: []traceRef{{ID: "pods", APIVersion: "v1", Kind: "Pod", Namespace: "team", Selector: "app=shop", State: refFound, Found: 2}},
		}, {
			Name: "other", NotSelected: "its parent.when is false for this parent", Children: []traceChild{},
		}},
	}
}

func TestWriteTraceTree(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 5, 0, 0, time.UTC)
	for _, tc := range []struct {
		wide bool
		want string
	}{{
		want: `NAME                                    SYNCED  READY  STATUS
WebApp/shop                             -       False  ChildrenNotReady
├─ rule web                             -       False  ChildrenNotReady: not ready: deployment (as of generation 2; the parent is at 3)
│  ├─ Deployment/shop (deployment)      True    False  NotReady: readyWhen is false (self.status.ready && true)
│  └─ refs.pods: Pod matching app=shop  -       -      Found: 2 objects
└─ rule other                           -       -      NotSelected: its parent.when is false for this parent
`,
	}, {
		wide: true,
		want: `NAME                                    NAMESPACE  APIVERSION      SYNCED  READY  AGE  STATUS
WebApp/shop                             team       example.com/v1  -       False  5m   ChildrenNotReady
├─ rule web                             -          -               -       False  -    ChildrenNotReady: not ready: deployment (as of generation 2; the parent is at 3)
│  ├─ Deployment/shop (deployment)      team       apps/v1         True    False  4m   NotReady: readyWhen is false (self.status.ready && true)
│  └─ refs.pods: Pod matching app=shop  team       v1              -       -      -    Found: 2 objects
└─ rule other                           -          -               -       -      -    NotSelected: its parent.when is false for this parent
`,
	}} {
		var buf bytes.Buffer
		if err := writeTraceTree(&buf, sampleTrace(), tc.wide, now); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, buf.String()); diff != "" {
			t.Errorf("wide=%v (-want +got):\n%s", tc.wide, diff)
		}
	}
}

func TestRuleStatus(t *testing.T) {
	for _, tc := range []struct {
		rule traceRule
		want string
	}{
		{traceRule{Selected: true, WritesStatus: true, EvaluatedReady: true}, "NoStatus: no conditions written yet; evaluated now: ready"},
		{traceRule{Selected: true}, "NoStatus: the rule writes no status; evaluated now: not ready"},
		{traceRule{Selected: true, WritesStatus: true, Synced: &clikit.Condition{Status: "False", Reason: "ChildExists", Message: "taken"}, Ready: &clikit.Condition{Status: "True", Reason: "AllChildrenReady"}}, "ChildExists: taken"},
		{traceRule{Selected: true, WritesStatus: true, Ready: &clikit.Condition{Status: "True", Reason: "AllChildrenReady", ObservedGeneration: 4}}, "AllChildrenReady"},
	} {
		if got := ruleStatus(tc.rule, 4); got != tc.want {
			t.Errorf("ruleStatus(%+v) = %q, want %q", tc.rule, got, tc.want)
		}
	}
}

func TestWriteTraceDot(t *testing.T) {
	var buf bytes.Buffer
	if err := writeTraceDot(&buf, sampleTrace()); err != nil {
		t.Fatal(err)
	}
	want := `digraph trace {
  rankdir=LR;
  node [shape=box, style="rounded,filled", fontname="Helvetica"];
  "parent" [label="WebApp\nshop", fillcolor=lightyellow];
  "rule/0" [label="rule web", fillcolor=lightyellow, shape=ellipse];
  "parent" -> "rule/0";
  "rule/0/child/0" [label="Deployment\nshop\n(deployment)\nNotReady", fillcolor=lightyellow];
  "rule/0" -> "rule/0/child/0";
  "rule/0/ref/0" [label="refs.pods\nPod\nFound", fillcolor=palegreen, shape=note];
  "rule/0" -> "rule/0/ref/0" [style=dashed, label="reads"];
  "rule/1" [label="rule other", fillcolor=lightgrey, shape=ellipse];
  "parent" -> "rule/1";
}
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
