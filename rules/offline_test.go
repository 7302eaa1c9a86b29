package rules

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules/contract"
)

const offlineRules = `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
    - id: cm
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}"}}
- name: tiers
  parent:
    apiVersion: example.com/v1
    resource: webapps
    namespaces: [team-a]
    selector: {matchLabels: {tier: web}}
  children:
    - id: cm
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-tier"}}
- name: other
  parent: {apiVersion: example.com/v1, resource: gadgets}
  children:
    - id: cm
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: g}}
`

func TestMatching(t *testing.T) {
	rs, err := Load(ruleFile(offlineRules), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The CRD maps WebApp to webapps; the guess maps the other kinds.
	crds := testSchemas(t)
	parent := func(apiVersion, kind, namespace string, lbls map[string]any) map[string]any {
		return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": "shop", "namespace": namespace, "labels": lbls}}
	}
	webapps := schema.GroupResource{Group: "example.com", Resource: "webapps"}
	tests := []struct {
		name    string
		parent  map[string]any
		crds    *CRDSchemas
		want    []string
		wantGR  schema.GroupResource
		wantErr string
	}{
		{name: "all rules of the resource that select it", parent: parent("example.com/v1", "WebApp", "team-a", map[string]any{"tier": "web"}), crds: crds,
			want: []string{"web", "tiers"}, wantGR: webapps},
		{name: "the selector excludes one", parent: parent("example.com/v1", "WebApp", "team-a", nil),
			want: []string{"web"}, wantGR: webapps},
		{name: "the namespaces exclude one", parent: parent("example.com/v1", "WebApp", "team-b", map[string]any{"tier": "web"}),
			want: []string{"web"}, wantGR: webapps},
		{name: "guessed plural", parent: parent("example.com/v1", "Gadget", "team-a", nil),
			want: []string{"other"}, wantGR: schema.GroupResource{Group: "example.com", Resource: "gadgets"}},
		{name: "no rule watches it, guessed", parent: parent("example.com/v1", "Policy", "team-a", nil),
			wantErr: "no rule watches example.com/v1 Policy (resource policies, guessed from the kind; pass --crds to map it exactly)"},
		{name: "no rule watches it, by the CRDs", parent: parent("example.com/v1", "Backend", "team-a", nil), crds: crds,
			wantErr: "no rule watches example.com/v1 Backend (resource backends, from the CRDs)"},
		{name: "bad apiVersion", parent: parent("a/b/c", "WebApp", "", nil),
			wantErr: "parent: unexpected GroupVersion string: a/b/c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, gr, err := rs.Matching(tt.parent, tt.crds)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Matching() error = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, r := range got {
				names = append(names, r.Name)
			}
			if diff := cmp.Diff(tt.want, names); diff != "" {
				t.Errorf("Matching() rules (-want +got):\n%s", diff)
			}
			if gr != tt.wantGR {
				t.Errorf("Matching() resource = %v, want %v", gr, tt.wantGR)
			}
		})
	}
	t.Run("rules of the resource exclude it", func(t *testing.T) {
		rs, err := Load(ruleFile(offlineRules[strings.Index(offlineRules, "- name: tiers"):]), Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = rs.Matching(parent("example.com/v1", "WebApp", "team-b", nil), nil)
		want := "no rule selects WebApp team-b/shop: rules for webapps exist, but their namespaces or selector exclude it"
		if err == nil || err.Error() != want {
			t.Errorf("Matching() error = %v, want %s", err, want)
		}
	})
}

// observedRule has a child that reads another child's observed object, and a ref.
const observedRule = `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  refs:
    - id: settings
      apiVersion: v1
      kind: ConfigMap
      name: settings
      optional: true
  children:
    - id: first
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: first}}
      readyWhen: "has(self.data)"
    - id: second
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${children.first.data.next}"}
        data: {color: "${refs.?settings.data.color.orValue('none')}"}
  status:
    fields:
      second: "${children.?second.data.color.orValue('')}"
`

// TestEvaluateObserved checks which objects EvaluateObserved takes as the parent's
// children and refs, and that it evaluates again while assigning an object by kind and
// name lets a waiting child produce more.
func TestEvaluateObserved(t *testing.T) {
	r := loadRule(t, observedRule, Options{})
	parent := webApp(nil)
	p := ParentRefOf(parent, schema.GroupResource{Group: "example.com", Resource: "webapps"}, true)
	labelled := func(obj map[string]any, lbls, ann map[string]any) map[string]any {
		md := obj["metadata"].(map[string]any)
		md["namespace"], md["labels"], md["annotations"] = "team-a", lbls, ann
		return obj
	}
	// first by its labels, second by kind and name once first lets it evaluate.
	first := labelled(configMap("first", map[string]any{"next": "second-name"}), map[string]any{contract.LabelChild: "first", contract.LabelParentUID: "u-1"}, nil)
	second := labelled(configMap("second-name", map[string]any{"color": "blue"}), nil, nil)
	settings := labelled(configMap("settings", map[string]any{"color": "blue"}), nil, nil)
	// Objects of another parent: by annotation, and by UID.
	otherByAnnotation := labelled(configMap("first", map[string]any{"next": "wrong"}), nil, map[string]any{contract.AnnotationParent: "example.com/webapps/team-a/other"})
	otherByUID := labelled(configMap("second-name", map[string]any{"color": "red"}), map[string]any{contract.LabelChild: "second", contract.LabelParentUID: "u-2"}, nil)

	res, err := r.EvaluateObserved(t.Context(), parent, p, []map[string]any{otherByAnnotation, otherByUID, second, first, settings})
	if err != nil {
		t.Fatal(err)
	}
	type child struct {
		ID, Name, Color string
		Observed, Ready bool
	}
	var got []child
	for _, d := range res.Children {
		data, _ := d.Object["data"].(map[string]any)
		color, _ := data["color"].(string)
		got = append(got, child{d.ID, d.Object["metadata"].(map[string]any)["name"].(string), color, d.Observed, d.Ready})
	}
	want := []child{{"first", "first", "", true, true}, {"second", "second-name", "blue", true, true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("children (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"second": "blue"}, res.Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if !res.Ready {
		t.Errorf("Ready = false, want true: %+v", res)
	}

	// With the placeholder UID, the UID label excludes nothing; nothing observed, the
	// second child waits.
	p.UID = contract.PlaceholderUID
	res, err = r.EvaluateObserved(t.Context(), parent, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Waiting{{ID: "second", On: []string{"first"}}}, res.Waiting); diff != "" {
		t.Errorf("waiting (-want +got):\n%s", diff)
	}
	if got := candidates(p, []map[string]any{otherByUID, otherByAnnotation}); len(got) != 1 || got[0]["data"].(map[string]any)["color"] != "red" {
		t.Errorf("candidates with the placeholder UID = %v, want the object labelled with another UID only", got)
	}
}
