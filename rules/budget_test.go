package rules

import (
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// growthRule's child "page" holds an expression in its spec.v (the child's kind has no
// schema, so any value fits) and, in spec.text, the text that growthCase.text gives.
func growthRule(expr, text string) string {
	return `- name: growth
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: page
    template:
      apiVersion: example.com/v1
      kind: Page
      metadata: {name: "${parent.metadata.name}"}
      spec:
        v: '${` + expr + `}'
        text: "` + text + `"
`
}

// growthCase is a way for whoever writes a parent to make an expression build far more
// than the parent holds: hundreds of megabytes from a parent of at most 130 KB.
type growthCase struct {
	name string
	// expr is the expression of the child's spec.v; text, when set, the interpolated
	// string of spec.text instead.
	expr, text string
	spec       map[string]any
}

func stringItems(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("i-%d", i)
	}
	return out
}

func growthCases() []growthCase {
	name32k := strings.Repeat("n", 32<<10)
	return []growthCase{
		// 4,000 placeholders, each replaced by 32 KiB: 128 MiB.
		{name: "replace", expr: `parent.spec.template.replace("{{name}}", parent.spec.name)`,
			spec: map[string]any{"template": strings.Repeat("{{name}}", 4000), "name": name32k}},
		// 4,000 strings joined with 32 KiB between them: 128 MiB.
		{name: "join", expr: `parent.spec.items.join(parent.spec.name)`,
			spec: map[string]any{"items": stringItems(4000), "name": name32k}},
		// 12 KiB split into characters, joined with itself: 144 MiB.
		{name: "split and join", expr: `parent.spec.name.split("").join(parent.spec.name)`,
			spec: map[string]any{"name": strings.Repeat("n", 12<<10)}},
		// 4,000 concatenations of 32 KiB in a comprehension: 128 MiB.
		{name: "concatenation in a comprehension", expr: `parent.spec.items.map(x, parent.spec.name + x)`,
			spec: map[string]any{"items": stringItems(4000), "name": name32k}},
		// 4,000 lists of 8,000 elements: 32 million elements.
		{name: "list concatenation in a comprehension", expr: `parent.spec.items.map(x, parent.spec.items + parent.spec.items)`,
			spec: map[string]any{"items": stringItems(4000)}},
		// 4,000 times the same list, flattened: 16 million elements.
		{name: "flatten", expr: `parent.spec.items.map(x, parent.spec.items).flatten()`,
			spec: map[string]any{"items": stringItems(4000)}},
		// 10,000 references to one 32 KiB string: 320 MiB once copied into the child.
		{name: "nested comprehensions", expr: `parent.spec.items.map(x, parent.spec.items.map(y, parent.spec.name))`,
			spec: map[string]any{"items": stringItems(100), "name": name32k}},
		// A map of 4,000 entries, each the same list of 4,000: 16 million elements.
		{name: "map building", expr: `parent.spec.items.transformMapEntry(i, x, {x: parent.spec.items})`,
			spec: map[string]any{"items": stringItems(4000)}},
		// The text of 16 million list elements.
		{name: "format of a list", expr: `"%s".format([parent.spec.items.map(x, parent.spec.items)])`,
			spec: map[string]any{"items": stringItems(4000)}},
		// A precision of 200 million digits.
		{name: "format precision", expr: `("%." + parent.spec.precision + "f").format([1.0])`,
			spec: map[string]any{"precision": "200000000"}},
		// 128 Ki one-character matches.
		{name: "findAll", expr: `parent.spec.name.findAll(".")`,
			spec: map[string]any{"name": strings.Repeat("n", 128<<10)}},
		// 64 interpolations of 32 KiB in one string: 2 MiB.
		{name: "interpolation", expr: `1`, text: strings.Repeat("${parent.spec.name}", 64),
			spec: map[string]any{"name": name32k}},
	}
}

// relaxed is the evaluation deadline of the tests that are not about it: out of the way
// on a busy machine.
const relaxed = time.Minute

// testBudget is the byte budget of the growth tests: small, so that the cases stay
// small too.
const testBudget = 1 << 20

// TestGrowthIsRefused: each way of building far more than the parent holds is refused
// before it builds it: the child fails with ErrMemoryLimit, named by rule, child, field
// and expression, and the evaluation allocates a few times the budget at most, not the
// hundreds of megabytes the expression asks for. Along both evaluation paths.
func TestGrowthIsRefused(t *testing.T) {
	for _, tt := range growthCases() {
		t.Run(tt.name, func(t *testing.T) {
			// A deadline out of the way, on a busy machine: the budget is what stops it.
			r := loadRule(t, growthRule(tt.expr, tt.text), Options{MaxEvalBytes: testBudget, EvalTimeout: relaxed})
			field, expr := "template.spec.v", "${"+tt.expr+"}"
			if tt.text != "" {
				field, expr = "template.spec.text", tt.text
			}
			for _, plain := range []bool{false, true} {
				parent := webApp(tt.spec)
				var ev *evaluation
				allocated := allocatedBy(func() { ev = r.evaluate(t.Context(), parent, nil, nil, plain) })
				res, err := ev.outcome()
				if !errors.Is(err, ErrMemoryLimit) {
					t.Fatalf("plain %v: Evaluate() error = %.300v, want ErrMemoryLimit", plain, err)
				}
				want := []errView{{Rule: "growth", Child: "page", Field: field, Expr: expr,
					Message: "memory limit exceeded: *"}}
				if diff := cmp.Diff(want, viewErrors(t, err, want)); diff != "" {
					t.Errorf("plain %v: errors (-want +got):\n%s", plain, diff)
				}
				if !strings.Contains(err.Error(), "past 1 MiB, the most one evaluation may build") {
					t.Errorf("plain %v: the error does not say the limit: %.300v", plain, err)
				}
				if diff := cmp.Diff([]string{"page"}, res.Failed); diff != "" {
					t.Errorf("plain %v: Failed (-want +got):\n%s", plain, diff)
				}
				t.Logf("plain %v: refused after allocating %d KiB", plain, allocated>>10)
				limit := uint64(8 * testBudget)
				if raceEnabled {
					// The race detector's sync.Pool drops a quarter of what is put back:
					// the regexp engine of findAll makes a machine for most matches.
					limit *= 8
				}
				if allocated > limit {
					t.Errorf("plain %v: the evaluation allocated %d MiB, more than %d MiB", plain, allocated>>20, limit>>20)
				}
			}
		})
	}
}

// allocatedBy returns the bytes that fn allocates (the tests of this package do not run
// in parallel).
func allocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestGrowthWithinTheBudget: the same expressions over small parents evaluate as they
// always did.
func TestGrowthWithinTheBudget(t *testing.T) {
	tests := []struct {
		expr string
		spec map[string]any
		want any
	}{
		{`parent.spec.template.replace("{{name}}", parent.spec.name)`, map[string]any{"template": "<{{name}}>", "name": "shop"}, "<shop>"},
		{`parent.spec.name.split("").join("-")`, map[string]any{"name": "abc"}, "a-b-c"},
		{`parent.spec.items.map(x, parent.spec.name + x)`, map[string]any{"items": []any{"a", "b"}, "name": "n-"}, []any{"n-a", "n-b"}},
		{`parent.spec.items.map(x, parent.spec.items).flatten()`, map[string]any{"items": []any{"a", "b"}}, []any{"a", "b", "a", "b"}},
		{`"%s".format([parent.spec.items])`, map[string]any{"items": []any{"a", "b"}}, "[a, b]"},
		{`("%." + parent.spec.precision + "f").format([1.0])`, map[string]any{"precision": "2"}, "1.00"},
		{`parent.spec.name.findAll("[ab]")`, map[string]any{"name": "abc"}, []any{"a", "b"}},
		{`parent.spec.items.transformMapEntry(i, x, {x: i})`, map[string]any{"items": []any{"a", "b"}}, map[string]any{"a": int64(0), "b": int64(1)}},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			r := loadRule(t, growthRule(tt.expr, "x"), Options{MaxEvalBytes: testBudget, EvalTimeout: relaxed})
			res, err := r.Evaluate(t.Context(), webApp(tt.spec), nil)
			if err != nil {
				t.Fatalf("Evaluate(): %v", err)
			}
			spec, _ := res.Children[0].Object["spec"].(map[string]any)
			if diff := cmp.Diff(tt.want, spec["v"]); diff != "" {
				t.Errorf("spec.v (-want +got):\n%s", diff)
			}
		})
	}
}

// greetingRule fills a page from a template the parent holds.
const greetingRule = `- name: greeting
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: page
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${parent.metadata.name}"}
      data:
        html: ${parent.spec.template.replace("{{name}}", parent.spec.name)}
`

// TestGrowthBombWithDefaultLimits is the finding as it was reported: a plausible rule
// (`check` says OK) and a 100 KB parent that makes it build a 312 MB string. With the
// default limits the parent's child fails; another parent of the same rule is rendered.
func TestGrowthBombWithDefaultLimits(t *testing.T) {
	r := loadRule(t, greetingRule, Options{EvalTimeout: relaxed})
	bomb := webApp(map[string]any{"template": strings.Repeat("{{name}}", 6250), "name": strings.Repeat("n", 50_000)})
	var err error
	allocated := allocatedBy(func() { _, err = r.Evaluate(t.Context(), bomb, nil) })
	if !errors.Is(err, ErrMemoryLimit) {
		t.Fatalf("Evaluate() error = %.300v, want ErrMemoryLimit", err)
	}
	want := `rule "greeting" child "page": template.data.html: ${parent.spec.template.replace("{{name}}", parent.spec.name)}: memory limit exceeded: replace() would take what the expressions of this parent build past 16 MiB, the most one evaluation may build; build less from what the parent holds`
	if err.Error() != want {
		t.Errorf("Evaluate() error:\n%s\nwant:\n%s", err, want)
	}
	if allocated > 4*DefaultMaxEvalBytes {
		t.Errorf("the evaluation allocated %d MiB, more than 4 times the budget", allocated>>20)
	}

	res, err := r.Evaluate(t.Context(), webApp(map[string]any{"template": "Hello {{name}}", "name": "shop"}), nil)
	if err != nil || len(res.Children) != 1 {
		t.Fatalf("Evaluate() of a small parent = %v, %v", res, err)
	}
	if got := res.Children[0].Object["data"]; !cmp.Equal(got, map[string]any{"html": "Hello shop"}) {
		t.Errorf("data = %v", got)
	}
}

// TestGrowthCountsAgainstTheCostLimit: what an expression builds counts against the
// cost limit with its real size, whatever the types the checker knew: a concatenation
// of dyn values in a comprehension (which CEL counts as one unit), a replace whose
// result is far larger than its input (which CEL and the Kubernetes library count by
// its input, and which ran without cost tracking).
func TestGrowthCountsAgainstTheCostLimit(t *testing.T) {
	tests := []struct {
		expr string
		spec map[string]any
	}{
		// 2,000 strings of 8 KiB: 16 MiB of text, 1.6 million units.
		{`parent.spec.items.map(x, parent.spec.name + x).size()`, map[string]any{"items": stringItems(2000), "name": strings.Repeat("n", 8<<10)}},
		// One string of 20 MB: 2 million units.
		{`parent.spec.template.replace("{{name}}", parent.spec.name).size()`, map[string]any{"template": strings.Repeat("{{name}}", 2000), "name": strings.Repeat("n", 10_000)}},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			// A budget and a deadline out of the way: the cost limit is what stops it.
			r := loadRule(t, growthRule(tt.expr, "x"), Options{MaxEvalBytes: 1 << 40, EvalTimeout: relaxed})
			_, err := r.Evaluate(t.Context(), webApp(tt.spec), nil)
			if !errors.Is(err, ErrCostLimit) {
				t.Fatalf("Evaluate() error = %.300v, want ErrCostLimit", err)
			}
		})
	}
}

// TestMemoryLimitOfSecretData: the memory limit's message quotes nothing, so it is shown
// for an expression that reads Secret data too, and holds none of it.
func TestMemoryLimitOfSecretData(t *testing.T) {
	const rule = `- name: secretive
  parent: {apiVersion: v1, resource: secrets}
  children:
  - id: copy
    template:
      apiVersion: v1
      kind: Secret
      metadata: {name: "${parent.metadata.name}-copy"}
      stringData:
        v: ${string(base64.decode(parent.data.token)).replace("", string(base64.decode(parent.data.token)))}
`
	r := loadRule(t, rule, Options{MaxEvalBytes: testBudget, EvalTimeout: relaxed})
	token := strings.Repeat("s3cr3t", 1000)
	parent := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db", "namespace": "a"},
		"data": map[string]any{"token": base64.StdEncoding.EncodeToString([]byte(token))}}
	_, err := r.Evaluate(t.Context(), parent, nil)
	if !errors.Is(err, ErrMemoryLimit) {
		t.Fatalf("Evaluate() error = %v, want ErrMemoryLimit", err)
	}
	if strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "memory limit exceeded: replace() would take") {
		t.Errorf("error = %v; want the memory limit, without the Secret's value", err)
	}
}

// TestBudgetIsPerEvaluation: each evaluation has its own budget, shared by all the
// expressions of the parent.
func TestBudgetIsPerEvaluation(t *testing.T) {
	const rule = `- name: halves
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: first
    template:
      apiVersion: example.com/v1
      kind: Page
      metadata: {name: first}
      spec: {v: "${parent.spec.name + parent.spec.name}"}
  - id: second
    template:
      apiVersion: example.com/v1
      kind: Page
      metadata: {name: second}
      spec: {v: "${parent.spec.name + parent.spec.name}"}
`
	// Each concatenation builds 400 KB, then each child's value is copied: 1.6 MB in
	// all, over a budget of 1 MiB; either child alone fits.
	r := loadRule(t, rule, Options{MaxEvalBytes: testBudget, EvalTimeout: relaxed})
	parent := webApp(map[string]any{"name": strings.Repeat("n", 200_000)})
	for range 3 {
		res, err := r.Evaluate(t.Context(), parent, nil)
		if !errors.Is(err, ErrMemoryLimit) {
			t.Fatalf("Evaluate() error = %v, want ErrMemoryLimit", err)
		}
		if diff := cmp.Diff([]string{"second"}, res.Failed); diff != "" || len(res.Children) != 1 {
			t.Errorf("Failed (-want +got):\n%s\nchildren: %d", diff, len(res.Children))
		}
	}
}
