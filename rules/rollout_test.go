package rules

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// rolloutRule is a rule whose rollout block is block (its lines indented by four
// spaces, from line 10 of the file ruleFile makes).
func rolloutRule(block string) string {
	return `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: cm
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}"}}
  rollout:
` + block + `  status: {fields: {name: "${parent.metadata.name}"}}
`
}

func TestLoadRollout(t *testing.T) {
	tests := []struct {
		name  string
		rules string
		want  *Rollout
		// healthy is the want of HealthyExpression.
		healthy string
	}{
		{
			name:  "no rollout",
			rules: strings.TrimSuffix(rolloutRule(""), "  rollout:\n"),
		},
		{
			name:  "a null rollout is none",
			rules: rolloutRule("    null\n"),
		},
		{
			name: "every field",
			rules: rolloutRule(`    steps: ["1%", "10%", "50%", "100%"]
    pause: 2m
    progressDeadline: 1h30m
    healthy: "parents.all(p, p.status.replicas > 0)"
    onFailure: Rollback
`),
			want:    &Rollout{Steps: []float64{1, 10, 50, 100}, Pause: 2 * time.Minute, ProgressDeadline: 90 * time.Minute, OnFailure: OnFailureRollback},
			healthy: "parents.all(p, p.status.replicas > 0)",
		},
		{
			name:    "defaults, and a final 100% is implied",
			rules:   rolloutRule("    steps: [10%, 50%]\n"),
			want:    &Rollout{Steps: []float64{10, 50, 100}, ProgressDeadline: DefaultProgressDeadline, OnFailure: OnFailurePause},
			healthy: "",
		},
		{
			name:  "decimals, an explicit Pause, a zero pause",
			rules: rolloutRule("    steps: [\"0.5%\", \"12.25%\", \"100%\"]\n    pause: 0s\n    onFailure: Pause\n"),
			want:  &Rollout{Steps: []float64{0.5, 12.25, 100}, ProgressDeadline: DefaultProgressDeadline, OnFailure: OnFailurePause},
		},
		{
			name:  "one step of 100%",
			rules: rolloutRule("    steps: [100%]\n    healthy: \"true\"\n"),
			want:  &Rollout{Steps: []float64{100}, ProgressDeadline: DefaultProgressDeadline, OnFailure: OnFailurePause},
			// The expression as written.
			healthy: "true",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := loadRule(t, tt.rules, Options{})
			if diff := cmp.Diff(tt.want, r.Rollout, cmpopts.IgnoreUnexported(Rollout{})); diff != "" {
				t.Errorf("Rollout (-want +got):\n%s", diff)
			}
			if got := r.Rollout.HealthyExpression(); got != tt.healthy {
				t.Errorf("HealthyExpression() = %q, want %q", got, tt.healthy)
			}
		})
	}
}

func TestLoadRolloutErrors(t *testing.T) {
	tests := []struct {
		name string
		// block is the rollout block, from line 10.
		block   string
		schemas bool
		opts    Options
		want    []errView
	}{
		{
			name:  "not a map",
			block: "    [10%]\n",
			want:  []errView{{Line: 9, Rule: "web", Field: "rollout", Message: "must be a map, not a list"}},
		},
		{
			name:  "unknown fields",
			block: "    steps: [10%]\n    pauses: 1m\n    deadline: 1m\n",
			want: []errView{
				{Line: 11, Rule: "web", Field: "rollout.pauses", Message: "unknown field (did you mean 'pause'?)"},
				{Line: 12, Rule: "web", Field: "rollout.deadline", Message: "unknown field"},
			},
		},
		{
			name:  "no steps",
			block: "    pause: 1m\n",
			want:  []errView{{Line: 9, Rule: "web", Field: "rollout.steps", Message: `required: the percent of the parents at the new revision after each step, such as ["10%", "50%", "100%"]`}},
		},
		{
			name:  "empty steps",
			block: "    steps: []\n",
			want:  []errView{{Line: 10, Rule: "web", Field: "rollout.steps", Message: `must not be empty: list the percent of the parents at the new revision after each step, such as ["10%", "50%", "100%"]`}},
		},
		{
			name:  "steps not a list",
			block: "    steps: 10%\n",
			want:  []errView{{Line: 10, Rule: "web", Field: "rollout.steps", Message: `must be a list of percents such as "10%", not a string`}},
		},
		{
			name:  "steps that are not percents",
			block: "    steps: [10, ten, \"5 %\", \" 20%\", \"%\", \"1e2%\", \".5%\", 30%]\n",
			want: []errView{
				{Line: 10, Rule: "web", Field: "rollout.steps[0]", Message: `must be a percent such as "10%", not a number`},
				{Line: 10, Rule: "web", Field: "rollout.steps[1]", Message: `must be a percent such as "10%", not "ten"`},
				{Line: 10, Rule: "web", Field: "rollout.steps[2]", Message: `must be a percent such as "10%", not "5 %"`},
				{Line: 10, Rule: "web", Field: "rollout.steps[3]", Message: `must be a percent such as "10%", not " 20%"`},
				{Line: 10, Rule: "web", Field: "rollout.steps[4]", Message: `must be a percent such as "10%", not "%"`},
				{Line: 10, Rule: "web", Field: "rollout.steps[5]", Message: `must be a percent such as "10%", not "1e2%"`},
				{Line: 10, Rule: "web", Field: "rollout.steps[6]", Message: `must be a percent such as "10%", not ".5%"`},
			},
		},
		{
			name:  "steps out of range",
			block: "    steps: [0%, \"0.0%\", 150%, \"100.5%\"]\n",
			want: []errView{
				{Line: 10, Rule: "web", Field: "rollout.steps[0]", Message: `must be more than 0%, not "0%"`},
				{Line: 10, Rule: "web", Field: "rollout.steps[1]", Message: `must be more than 0%, not "0.0%"`},
				{Line: 10, Rule: "web", Field: "rollout.steps[2]", Message: `must be at most 100%, not "150%"`},
				{Line: 10, Rule: "web", Field: "rollout.steps[3]", Message: `must be at most 100%, not "100.5%"`},
			},
		},
		{
			name:  "steps not increasing",
			block: "    steps:\n      - 10%\n      - 10%\n      - 5%\n      - 50%\n      - \"50.0%\"\n",
			want: []errView{
				{Line: 12, Rule: "web", Field: "rollout.steps[1]", Message: `must be more than the step before it ("10%"), not "10%"`},
				{Line: 13, Rule: "web", Field: "rollout.steps[2]", Message: `must be more than the step before it ("10%"), not "5%"`},
				{Line: 15, Rule: "web", Field: "rollout.steps[4]", Message: `must be more than the step before it ("50%"), not "50.0%"`},
			},
		},
		{
			name:  "bad durations",
			block: "    steps: [10%]\n    pause: soon\n    progressDeadline: 10\n",
			want: []errView{
				{Line: 11, Rule: "web", Field: "rollout.pause", Message: `must be a duration such as "2m" or "1h30m", not "soon"`},
				{Line: 12, Rule: "web", Field: "rollout.progressDeadline", Message: `must be a string holding a duration such as "2m", not a number`},
			},
		},
		{
			name:  "a negative pause, a deadline that is not positive",
			block: "    steps: [10%]\n    pause: -1s\n    progressDeadline: 0s\n",
			want: []errView{
				{Line: 11, Rule: "web", Field: "rollout.pause", Message: `must not be negative, not "-1s"`},
				{Line: 12, Rule: "web", Field: "rollout.progressDeadline", Message: `must be more than 0, not "0s"`},
			},
		},
		{
			name:  "a negative deadline",
			block: "    steps: [10%]\n    progressDeadline: -5m\n",
			want:  []errView{{Line: 11, Rule: "web", Field: "rollout.progressDeadline", Message: `must be more than 0, not "-5m"`}},
		},
		{
			name:  "canaries name nothing",
			block: "    steps: [10%]\n    canaries: {}\n",
			want:  []errView{{Line: 11, Rule: "web", Field: "rollout.canaries", Message: "name the canaries: namespaces, a selector, or both"}},
		},
		{
			name:  "canaries: a bad selector, a label of the parent",
			block: "    steps: [10%]\n    canaries:\n      selector: {matchExpressions: [{key: tier, operator: Near}]}\n      label: canary\n",
			want: []errView{
				{Line: 12, Rule: "web", Field: "rollout.canaries.selector", Message: `invalid label selector: "Near" is not a valid label selector operator`},
				{Line: 13, Rule: "web", Field: "rollout.canaries.label", Message: "unknown field"},
			},
		},
		{
			name:  "onFailure",
			block: "    steps: [10%]\n    onFailure: rollback\n",
			want:  []errView{{Line: 11, Rule: "web", Field: "rollout.onFailure", Message: `must be Pause or Rollback, not "rollback"`}},
		},
		{
			name:  "healthy must be a bool",
			block: "    steps: [10%]\n    healthy: parents.size()\n",
			want:  []errView{{Line: 11, Rule: "web", Field: "rollout.healthy", Expr: "parents.size()", Column: 1, Message: "must evaluate to a bool, not int"}},
		},
		{
			name:  "healthy reads only parents",
			block: "    steps: [10%]\n    healthy: parent.spec.replicas > 0 && size(children) == 0\n",
			want: []errView{
				{Line: 11, Rule: "web", Field: "rollout.healthy", Expr: "parent.spec.replicas > 0 && size(children) == 0", Column: 1, Message: "undeclared reference to 'parent': rollout.healthy reads only parents, the list of the parents the rollout has reached"},
				{Line: 11, Rule: "web", Field: "rollout.healthy", Expr: "parent.spec.replicas > 0 && size(children) == 0", Column: 34, Message: "undeclared reference to 'children': rollout.healthy reads only parents, the list of the parents the rollout has reached"},
			},
		},
		{
			name:  "healthy syntax error",
			block: "    steps: [10%]\n    healthy: parents.all(p,\n",
			want:  []errView{{Line: 11, Rule: "web", Field: "rollout.healthy", Expr: "parents.all(p,", Column: 15, Message: "syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"}},
		},
		{
			name:    "healthy is typed like parent",
			block:   "    steps: [10%]\n    healthy: parents[0].spec.replica > 0\n",
			schemas: true,
			want:    []errView{{Line: 11, Rule: "web", Field: "rollout.healthy", Expr: "parents[0].spec.replica > 0", Column: 16, Message: "undefined field 'replica' (did you mean 'replicas'?)"}},
		},
		{
			name:    "healthy type error against the schema",
			block:   "    steps: [10%]\n    healthy: parents.all(p, p.spec.image > 0)\n",
			schemas: true,
			want:    []errView{{Line: 11, Rule: "web", Field: "rollout.healthy", Expr: "parents.all(p, p.spec.image > 0)", Column: 29, Message: "found no matching overload for '_>_' applied to '(string, int)'"}},
		},
		{
			name:  "healthy's estimated cost is limited",
			block: "    steps: [10%]\n    healthy: parents.all(p, parents.all(q, p.metadata.name != q.metadata.name))\n",
			opts:  Options{CostLimit: 5},
			want:  []errView{{Line: 11, Rule: "web", Field: "rollout.healthy", Expr: "parents.all(p, parents.all(q, p.metadata.name != q.metadata.name))", Message: "estimated cost 15 exceeds the limit 5: it iterates over too many elements in the worst case; bound the lists it reads (maxItems in the schema) or iterate less"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			if tt.schemas {
				opts.Schemas = testSchemas(t)
			}
			_, err := Load(ruleFile(rolloutRule(tt.block)), opts)
			if err == nil {
				t.Fatal("Load() succeeded")
			}
			if diff := cmp.Diff(tt.want, viewErrors(t, err, tt.want)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// healthyParent is a parent with status.replicas set to replicas, or without status
// when replicas is negative.
func healthyParent(name string, replicas int64) map[string]any {
	p := webApp(map[string]any{"image": "nginx", "replicas": int64(2)})
	p["metadata"].(map[string]any)["name"] = name
	if replicas >= 0 {
		p["status"] = map[string]any{"replicas": replicas}
	}
	return p
}

func TestHealthy(t *testing.T) {
	const allUp = "parents.all(p, p.status.replicas > 0)"
	many := make([]map[string]any, 300)
	for i := range many {
		many[i] = healthyParent(fmt.Sprint("p", i), 1)
	}
	tests := []struct {
		name    string
		healthy string
		schemas bool
		opts    Options
		parents []map[string]any
		want    bool
		// wantErr is the error's view; wantIs what it wraps.
		wantErr []errView
		wantIs  error
	}{
		{
			name:    "no healthy is healthy",
			parents: []map[string]any{healthyParent("a", 0)},
			want:    true,
		},
		{
			name:    "true",
			healthy: allUp,
			parents: []map[string]any{healthyParent("a", 1), healthyParent("b", 3)},
			want:    true,
		},
		{
			name:    "false",
			healthy: allUp,
			parents: []map[string]any{healthyParent("a", 1), healthyParent("b", 0)},
			want:    false,
		},
		{
			name:    "no parents yet",
			healthy: allUp,
			want:    true,
		},
		{
			name:    "typed parents",
			healthy: "parents.all(p, p.status.availableReplicas >= p.spec.replicas)",
			schemas: true,
			parents: []map[string]any{func() map[string]any {
				p := healthyParent("a", -1)
				p["status"] = map[string]any{"availableReplicas": int64(2)}
				return p
			}()},
			want: true,
		},
		{
			name:    "a missing field fails, naming the rule, the field and the expression",
			healthy: allUp,
			parents: []map[string]any{healthyParent("a", 1), healthyParent("b", -1)},
			wantErr: []errView{{Rule: "web", Field: "rollout.healthy", Expr: allUp,
				Message: "no such key: status (p.status is not set; write p.?status.orValue(DEFAULT) for a default, or test it with has(p.status))"}},
		},
		{
			name:    "a dynamic result that is not a bool",
			healthy: `parents.all(p, true) ? parents[0].metadata.name : false`,
			parents: []map[string]any{healthyParent("a", 1)},
			wantErr: []errView{{Rule: "web", Field: "rollout.healthy", Expr: `parents.all(p, true) ? parents[0].metadata.name : false`,
				Message: "must evaluate to a bool, not string"}},
		},
		{
			name:    "the cost limit stops it",
			healthy: "parents.all(p, parents.all(q, parents.all(r, p.metadata.name != r.metadata.name || q == q)))",
			opts:    Options{CostLimit: 100_000, EvalTimeout: time.Minute},
			parents: many,
			wantErr: []errView{{Rule: "web", Field: "rollout.healthy", Expr: "parents.all(p, parents.all(q, parents.all(r, p.metadata.name != r.metadata.name || q == q)))",
				Message: "cost limit exceeded: the expression did more work than its limit allows; iterate over fewer elements"}},
			wantIs: ErrCostLimit,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			if tt.schemas {
				opts.Schemas = testSchemas(t)
			}
			block := "    steps: [10%]\n"
			if tt.healthy != "" {
				block += "    healthy: '" + strings.ReplaceAll(tt.healthy, "'", "''") + "'\n"
			}
			r := loadRule(t, rolloutRule(block), opts)
			got, err := r.Rollout.Healthy(t.Context(), tt.parents)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Healthy() error: %v", err)
				}
				if got != tt.want {
					t.Errorf("Healthy() = %v, want %v", got, tt.want)
				}
				return
			}
			if got {
				t.Error("Healthy() = true with an error")
			}
			if diff := cmp.Diff(tt.wantErr, viewErrors(t, err, tt.wantErr)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Healthy() error %v does not wrap %v", err, tt.wantIs)
			}
		})
	}
}

// TestHealthyNeverQuotesSecrets evaluates healthy expressions that fail with an
// argument read from a Secret parent: the errors name the rule, the field and the
// expression, say that the message is withheld, and never hold the value. Over
// ConfigMap parents the same expressions do quote it.
func TestHealthyNeverQuotesSecrets(t *testing.T) {
	parents := func(kind string) []map[string]any {
		return []map[string]any{{
			"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": "creds", "namespace": "team"},
			"data": map[string]any{"dsn": "postgres://admin:" + planted + "@db.internal:5432/app\x7f", "token": planted, "num": "99"},
		}}
	}
	rule := func(resource, expr string) string {
		return fmt.Sprintf(`- name: watch
  parent: {apiVersion: v1, resource: %s}
  status:
    fields:
      seen: "yes"
  rollout:
    steps: [50%%]
    healthy: 'parents.all(p, string(%s) != "")'
`, resource, strings.ReplaceAll(expr, "s.", "p.data."))
	}
	quoted := 0
	for _, expr := range secretFailures {
		t.Run(expr, func(t *testing.T) {
			r := loadRule(t, rule("secrets", expr), Options{})
			_, err := r.Rollout.Healthy(t.Context(), parents("Secret"))
			if err == nil {
				t.Fatalf("%s did not fail", expr)
			}
			msg := err.Error()
			if strings.Contains(msg, planted) || strings.Contains(msg, "admin:") {
				t.Errorf("the Secret value is in the error:\n%s", msg)
			}
			want := `rule "watch": rollout.healthy: ` + r.Rollout.HealthyExpression() + ": evaluation failed; its message is withheld because the expression reads Secret data (parents)"
			if msg != want {
				t.Errorf("error:\n%s\nwant:\n%s", msg, want)
			}
		})
		r := loadRule(t, rule("configmaps", expr), Options{})
		if _, err := r.Rollout.Healthy(t.Context(), parents("ConfigMap")); err != nil && strings.Contains(err.Error(), planted) {
			quoted++
		}
	}
	if quoted == 0 {
		t.Error("no expression's error quotes the value over ConfigMaps: the table no longer tests the redaction")
	}
	t.Logf("%d of %d errors quote the value over ConfigMaps", quoted, len(secretFailures))
}

const rolloutNeedsStatus = "needs the rule's status block: a step is healthy when its parents' Ready and Synced conditions, which only a rule with a status block writes, say so"

func TestRolloutNeedsStatus(t *testing.T) {
	src := `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: cm
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}"}}
  rollout: {steps: ["50%"]}
`
	_, err := Load(ruleFile(src), Options{})
	want := []errView{{Line: 9, Rule: "web", Field: "rollout", Message: rolloutNeedsStatus}}
	if diff := cmp.Diff(want, viewErrors(t, err, want)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// TestCanaries: the policy, not the parent, says which parents go first.
func TestCanaries(t *testing.T) {
	load := func(block string) *Rollout {
		t.Helper()
		rs, err := Load(ruleFile(rolloutRule("    steps: [10%]\n"+block)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return rs.Rules[0].Rollout
	}
	tests := []struct {
		name      string
		block     string
		namespace string
		labels    map[string]string
		want      bool
	}{
		{name: "no canaries: a canary label is nothing", namespace: "a", labels: map[string]string{"rollout.kubecel.dev/canary": "true"}},
		{name: "in a namespace named", block: "    canaries: {namespaces: [staging]}\n", namespace: "staging", want: true},
		{name: "in another namespace", block: "    canaries: {namespaces: [staging]}\n", namespace: "prod"},
		{name: "matching the selector", block: "    canaries: {selector: {matchLabels: {ring: early}}}\n", namespace: "a", labels: map[string]string{"ring": "early"}, want: true},
		{name: "not matching", block: "    canaries: {selector: {matchLabels: {ring: early}}}\n", namespace: "a", labels: map[string]string{"ring": "late"}},
		{name: "both: the namespace and the labels", block: "    canaries: {namespaces: [staging], selector: {matchLabels: {ring: early}}}\n", namespace: "staging", labels: map[string]string{"ring": "early"}, want: true},
		{name: "both: the labels alone are not enough", block: "    canaries: {namespaces: [staging], selector: {matchLabels: {ring: early}}}\n", namespace: "prod", labels: map[string]string{"ring": "early"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := load(tt.block).IsCanary(tt.namespace, tt.labels); got != tt.want {
				t.Errorf("IsCanary(%s, %v) = %v, want %v", tt.namespace, tt.labels, got, tt.want)
			}
		})
	}
}
