package rules

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// thingParent is parent Thing<i> named name, with spec.value value.
func thingParent(i int, name string, value any) map[string]any {
	return map[string]any{
		"apiVersion": "bench.kubecel.dev/v1", "kind": fmt.Sprintf("Thing%d", i),
		"metadata": map[string]any{"name": name, "namespace": "bench"},
		"spec":     map[string]any{"value": value},
	}
}

// loadThings loads the rules of thingRules(n, own).
func loadThings(t *testing.T, n int, own bool) []*Rule {
	t.Helper()
	data, schemas := thingRules(n, own)
	rs, err := Load(data, Options{Schemas: schemas, EvalTimeout: relaxed})
	if err != nil {
		t.Fatalf("Load():\n%v", err)
	}
	return rs.Rules
}

// TestRulesOfOneSchemaShare checks what the rules of one load share: the type of
// `parent` and the programs of the same text between rules whose CRDs have the same
// schema, nothing between rules whose CRDs' schemas differ.
func TestRulesOfOneSchemaShare(t *testing.T) {
	same := loadThings(t, 2, false)
	if same[0].parentType == nil || same[0].parentType != same[1].parentType {
		t.Error("two rules of one schema do not share the type of parent")
	}
	if a, b := same[0].status[0].value.Prog, same[1].status[0].value.Prog; a == b || a.prg != b.prg {
		t.Errorf("two rules of one schema: status programs %p and %p, cel programs shared = %v; want their own programs sharing one cel program", a, b, a.prg == b.prg)
	}
	own := loadThings(t, 2, true)
	if own[0].parentType == own[1].parentType {
		t.Error("two rules of different schemas share the type of parent")
	}
	if own[0].status[0].value.Prog.prg == own[1].status[0].value.Prog.prg {
		t.Error("two rules of different schemas share a program")
	}
}

// TestSharedTypesCheckEachSchema checks that sharing never lets a rule read what its own
// parent's schema does not declare: rule thing1, whose status reads spec.thing1, loads
// only when CRD Thing1 declares it, whether the rules loaded with it have a schema
// without it (thing0) or the same schema as its own (thing2).
func TestSharedTypesCheckEachSchema(t *testing.T) {
	text := "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n"
	for i := range 3 {
		rule := fmt.Sprintf(thingRule, i)
		if i == 1 {
			rule = strings.Replace(rule, "fields:\n        value: ${parent.spec.value}", "fields:\n        value: ${parent.spec.thing1}", 1)
		}
		text += rule
	}
	withField := func(i int) *apiextensionsv1.CustomResourceDefinition {
		crd := thingCRD(i, false)
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["thing1"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		return crd
	}
	if _, err := Load([]byte(text), Options{Schemas: SchemasFromCRDs(thingCRD(0, false), withField(1), withField(2))}); err != nil {
		t.Errorf("Load() with spec.thing1 in Thing1's schema:\n%v", err)
	}
	_, err := Load([]byte(text), Options{Schemas: SchemasFromCRDs(thingCRD(0, false), thingCRD(1, false), withField(2))})
	if err == nil || !strings.Contains(err.Error(), `rule "thing1"`) || !strings.Contains(err.Error(), "thing1") || strings.Contains(err.Error(), `rule "thing0"`) || strings.Contains(err.Error(), `rule "thing2"`) {
		t.Errorf("Load() without spec.thing1 in Thing1's schema = %v, want an error of rule thing1 alone", err)
	}
}

// TestSharedProgramsEvaluateEachRule evaluates, concurrently, rules whose programs are
// shared (compiled concurrently too: there are more than parallelFrom): each result is
// its own rule's and parent's, and an error names its own rule.
func TestSharedProgramsEvaluateEachRule(t *testing.T) {
	rules := loadThings(t, 2*parallelFrom, false)
	var wg sync.WaitGroup
	for i, r := range rules {
		for j := range 4 {
			wg.Go(func() {
				name := fmt.Sprintf("p%d-%d", i, j)
				res, err := r.Evaluate(t.Context(), thingParent(i, name, name+"-v"), nil)
				if err != nil {
					t.Errorf("%s: Evaluate(%s) error: %v", r.Name, name, err)
					return
				}
				if diff := cmp.Diff(map[string]any{"value": name + "-v"}, res.Status); diff != "" {
					t.Errorf("%s: Evaluate(%s) status (-want +got):\n%s", r.Name, name, diff)
				}
				if len(res.Children) != 2 || res.Children[0].Object["metadata"].(map[string]any)["name"] != name+"-config" {
					t.Errorf("%s: Evaluate(%s) children = %+v, want %s-config first", r.Name, name, res.Children, name)
				}
				// A parent without spec.value fails in the rule's own name.
				bad := thingParent(i, name, nil)
				delete(bad["spec"].(map[string]any), "value")
				_, err = r.Evaluate(t.Context(), bad, nil)
				if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("rule %q", r.Name)) {
					t.Errorf("%s: Evaluate(no spec.value) error = %v, want one naming rule %q", r.Name, err, r.Name)
				}
			})
		}
	}
	wg.Wait()
}

// TestReloadWithSharedPrograms reloads a set of rules that share programs, with one rule
// edited: the others are taken over (Options.Previous) and evaluate as before, and the
// edited one, compiled in a load of its own, evaluates its new text.
func TestReloadWithSharedPrograms(t *testing.T) {
	data, schemas := thingRules(3, false)
	opts := Options{Schemas: schemas, EvalTimeout: relaxed}
	first, err := Load(data, opts)
	if err != nil {
		t.Fatalf("Load():\n%v", err)
	}
	// Rule thing1's status field, on the same line, so that the other rules keep their
	// places.
	at := strings.Index(string(data), "name: thing1\n")
	edited := string(data[:at]) + strings.Replace(string(data[at:]), "fields:\n        value: ${parent.spec.value}", "fields:\n        value: ${parent.spec.value + \"!\"}", 1)
	opts.Previous = first
	second, err := Load([]byte(edited), opts)
	if err != nil {
		t.Fatalf("Load(edited):\n%v", err)
	}
	for i, r := range second.Rules {
		// A rule taken over is a copy of the one before, with its compiled parts.
		if took := r.status[0].value == first.Rules[i].status[0].value; took != (i != 1) {
			t.Errorf("rule %s taken over = %v, want %v", r.Name, took, i != 1)
		}
		want := "v"
		if i == 1 {
			want = "v!"
		}
		res, err := r.Evaluate(t.Context(), thingParent(i, "p", "v"), nil)
		if err != nil || res.Status["value"] != want {
			t.Errorf("%s: Evaluate() = %+v, %v; want status value %s", r.Name, res.Status, err, want)
		}
	}
}
