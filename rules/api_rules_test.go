package rules

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// websiteRule is a rule that defines its parent's API (line 4 of ruleFile).
const websiteRule = `  - name: website
    api:
      group: sites.example.com
      version: v1
      kind: Website
      spec:
        image: string | required=true
        replicas: integer | default=1 minimum=1
        tier: string | default=web enum=web,api
      status:
        url: string
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata:
            name: ${parent.metadata.name}
          data:
            image: ${parent.spec.image}
            replicas: ${string(parent.spec.replicas)}
    status:
      fields:
        url: ${"http://" + parent.metadata.name}
`

func TestAPIRule(t *testing.T) {
	rs, err := Load(ruleFile(websiteRule), Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rs.Rules[0]
	want := schema.GroupVersionResource{Group: "sites.example.com", Version: "v1", Resource: "websites"}
	if r.Parent.GVR != want || r.API() == nil || r.API().GVR() != want {
		t.Errorf("parent %v, api %v; want %v", r.Parent.GVR, r.API(), want)
	}
	if !r.ParentTypeChecked() {
		t.Error("parent is not typed from the generated schema")
	}
	crds := rs.CRDs()
	if len(crds) != 1 || crds[0].Name != "websites.sites.example.com" {
		t.Fatalf("CRDs = %v", crds)
	}
	if cols := crds[0].Spec.Versions[0].AdditionalPrinterColumns; len(cols) != 3 || !strings.Contains(cols[0].JSONPath, `"Ready"`) {
		t.Errorf("columns = %+v, want Ready, Synced, Age", cols)
	}
	if namespaced, known := ResourceNamespaced(want.GroupResource(), rs.Schemas()); !namespaced || !known {
		t.Errorf("scope of the defined resource: namespaced %v known %v", namespaced, known)
	}

	// Offline, the parent is admitted as the API server would: replicas defaults to 1.
	parent := map[string]any{"apiVersion": "sites.example.com/v1", "kind": "Website",
		"metadata": map[string]any{"name": "shop", "namespace": "default"}, "spec": map[string]any{"image": "nginx"}}
	admitted, err := rs.Admit(parent)
	if err != nil || admitted == nil {
		t.Fatalf("Admit: %v, %v", admitted, err)
	}
	matched, gr, err := rs.Matching(admitted.Object, nil)
	if err != nil || len(matched) != 1 || gr != want.GroupResource() {
		t.Fatalf("Matching: %v %v %v", matched, gr, err)
	}
	res, err := r.EvaluateObserved(context.Background(), admitted.Object, ParentRefOf(admitted.Object, gr, true), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Children[0].Object["data"]; !cmp.Equal(got, map[string]any{"image": "nginx", "replicas": "1"}) {
		t.Errorf("data = %v", got)
	}
	if a, err := rs.Admit(map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}); a != nil || err != nil {
		t.Errorf("Admit of a kind no rule defines = %v, %v", a, err)
	}
}

// TestAPIRuleOtherRules checks that the generated schema types the other rules of the
// set, and that a cluster that does not serve the API yet is no error.
func TestAPIRuleOtherRules(t *testing.T) {
	other := `  - name: watcher
    parent: {apiVersion: sites.example.com/v1, resource: websites}
    children:
      - id: c
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-w"}
          data: {tier: "${parent.spec.tiers}"}
`
	_, err := Load(ruleFile(websiteRule+other), Options{})
	if err == nil || !strings.Contains(err.Error(), `rule "watcher" child "c": template.data.tier: ${parent.spec.tiers}: undefined field 'tiers' (did you mean 'tier'?)`) {
		t.Errorf("err = %v", err)
	}
	served := notServed{}
	if _, err := Load(ruleFile(websiteRule), Options{Served: served}); err != nil {
		t.Errorf("the defined API is not served yet, which is no error: %v", err)
	}
	if _, err := Load(ruleFile(strings.ReplaceAll(other, "tiers", "tier")), Options{Served: served}); err == nil {
		t.Error("a resource no rule defines and the cluster does not serve loaded")
	}
}

type notServed struct{}

func (notServed) ResourceServed(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return ""
	}
	return "not served"
}

func (notServed) KindServed(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return ""
	}
	return "not served"
}

func TestAPIRuleErrors(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		want           []errView
	}{
		{"bad marker", "replicas: integer | default=1 minimum=1", "replicas: integer | default=1 minimun=1", []errView{
			{Line: 11, Rule: "website", Field: "api.spec.replicas", Message: `unknown marker "minimun" (did you mean 'minimum'?); markers are required, default, description, enum, minimum, maximum, pattern, minLength, maxLength, format, minItems, maxItems, uniqueItems, listType, listMapKey, minProperties, maxProperties, immutable, validation, message`},
		}},
		{"bad type", "image: string | required=true", "image: strin | required=true", []errView{
			{Line: 10, Rule: "website", Field: "api.spec.image", Message: `unknown type "strin" (did you mean 'string'?): use one of string, integer, number, float, boolean, object, []T, map[string]T or a name from types`},
		}},
		{"parent names the resource", "    api:\n", "    parent: {apiVersion: sites.example.com/v1}\n    api:\n", []errView{
			{Line: 5, Rule: "website", Field: "parent.apiVersion", Message: "the rule's api defines the parent resource: remove parent.apiVersion (parent may only narrow the parents: namespaces, selector, when)"},
		}},
		{"status not declared", "        url: string\n", "        link: string\n", []errView{
			{Line: 27, Rule: "website", Field: "status.fields.url", Message: "websites.sites.example.com does not declare status.url, and the API server drops undeclared fields: add url: TYPE (such as string) to the status of the rule that defines it"},
		}},
		{"type error against the api", "${string(parent.spec.replicas)}", "${parent.spec.replicas}", []errView{
			{Line: 24, Rule: "website", Child: "config", Field: "template.data.replicas", Expr: "${parent.spec.replicas}", Message: "*"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(websiteRule, tc.from, tc.to, 1)
			if src == websiteRule {
				t.Fatalf("no %q in the rule", tc.from)
			}
			_, err := Load(ruleFile(src), Options{})
			got := viewErrors(t, err, tc.want)
			if tc.want[0].Message == "*" && len(got) > 0 {
				got[0].Message = "*"
			}
			for i := range got {
				got[i].Column = 0
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAPIDefinedTwice(t *testing.T) {
	second := strings.Replace(websiteRule, "name: website", "name: website2", 1)
	_, err := Load(ruleFile(websiteRule+second), Options{})
	if err == nil || !strings.Contains(err.Error(), `rule "website2": api.kind: rule "website" defines websites.sites.example.com already; an API is defined by one rule`) {
		t.Errorf("err = %v", err)
	}
	noParent := "  - name: x\n    children: [{id: c, template: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}}]\n"
	_, err = Load(ruleFile(noParent), Options{})
	if err == nil || !strings.Contains(err.Error(), "parent: required: the resource the rule watches (or api, to define a new one)") {
		t.Errorf("err = %v", err)
	}
}
