package rules

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// statusRule is a rule that writes the given status fields of a parent resource.
func statusRule(name, apiVersion, resource, fields string) string {
	return "- name: " + name + "\n" +
		"  parent: {apiVersion: " + apiVersion + ", resource: " + resource + "}\n" +
		"  status: {fields: " + fields + "}\n"
}

func TestStatusFieldsHaveOneWriter(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want []errView
	}{
		{
			name: "same field, other version",
			data: ruleFile(statusRule("a", "example.com/v1", "webapps", `{url: "x"}`) +
				statusRule("b", "example.com/v2", "webapps", `{ready: "y", url: "x"}`)),
			want: []errView{{Line: 9, Rule: "b", Field: "status.fields.url", Message: `rules "a" and "b" both write status.url of webapps.example.com; each field may be written by one rule`}},
		},
		{
			name: "each later writer is reported once, with the first",
			data: ruleFile(statusRule("a", "v1", "configmaps", `{url: "x"}`) +
				statusRule("b", "v1", "configmaps", `{url: "x"}`) +
				statusRule("c", "v1", "configmaps", `{"my-url": "x", url: "x"}`) +
				statusRule("d", "v1", "configmaps", `{"my-url": "x"}`)),
			want: []errView{
				{Line: 9, Rule: "b", Field: "status.fields.url", Message: `rules "a" and "b" both write status.url of configmaps; each field may be written by one rule`},
				{Line: 12, Rule: "c", Field: "status.fields.url", Message: `rules "a" and "c" both write status.url of configmaps; each field may be written by one rule`},
				{Line: 15, Rule: "d", Field: "status.fields.my-url", Message: `rules "c" and "d" both write status.my-url of configmaps; each field may be written by one rule`},
			},
		},
		{
			name: "rules that cannot select the same parent may use the same field",
			data: ruleFile(`- name: web
  parent: {apiVersion: example.com/v1, resource: webapps, selector: {matchLabels: {kind: web}}}
  status: {fields: {url: "x"}}
- name: db
  parent: {apiVersion: example.com/v1, resource: webapps, selector: {matchLabels: {kind: db}}}
  status: {fields: {url: "y"}}
`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.data, Options{})
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Load() = %v, want no error", err)
				}
				return
			}
			if diff := cmp.Diff(tt.want, viewErrors(t, err, tt.want)); diff != "" {
				t.Errorf("Load() errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConditionTypes(t *testing.T) {
	type conditions struct{ Ready, Synced string }
	tests := []struct {
		name  string
		rules string
		want  map[string]conditions
	}{
		{
			name:  "the only status writer of its resource",
			rules: statusRule("a", "example.com/v1", "webapps", `{url: "x"}`),
			want:  map[string]conditions{"a": {"Ready", "Synced"}},
		},
		{
			name: "several writers of one resource own their conditions",
			rules: statusRule("a", "example.com/v1", "webapps", `{url: "x"}`) +
				statusRule("b", "example.com/v2", "webapps", `{ready: "y"}`) +
				// Another group's resource of the same name is another resource.
				statusRule("c", "other.example.com/v1", "webapps", `{url: "x"}`) +
				`- name: d
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: cm
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: cm}}
`,
			want: map[string]conditions{
				"a": {"a.kubecel.dev/Ready", "a.kubecel.dev/Synced"},
				"b": {"b.kubecel.dev/Ready", "b.kubecel.dev/Synced"},
				"c": {"Ready", "Synced"},
				"d": {"Ready", "Synced"}, // it writes no status
			},
		},
		{
			name: "writers that select different parents keep the plain conditions",
			rules: `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps, selector: {matchLabels: {kind: web}}}
  status: {fields: {url: "x"}}
- name: db
  parent: {apiVersion: example.com/v1, resource: webapps, selector: {matchLabels: {kind: db}}}
  status: {fields: {url: "y"}}
- name: a
  parent: {apiVersion: v1, resource: configmaps, namespaces: [a]}
  status: {fields: {url: "x"}}
- name: b
  parent: {apiVersion: v1, resource: configmaps, namespaces: [b]}
  status: {fields: {url: "x"}}
- name: n1
  parent: {apiVersion: v1, resource: namespaces, namespaces: [a]}
  status: {fields: {one: "x"}}
- name: n2
  parent: {apiVersion: v1, resource: namespaces, namespaces: [b]}
  status: {fields: {two: "x"}}
`,
			want: map[string]conditions{
				"web": {"Ready", "Synced"}, "db": {"Ready", "Synced"},
				"a": {"Ready", "Synced"}, "b": {"Ready", "Synced"},
				// namespaces do not apply to cluster-scoped parents: these two may meet
				"n1": {"n1.kubecel.dev/Ready", "n1.kubecel.dev/Synced"},
				"n2": {"n2.kubecel.dev/Ready", "n2.kubecel.dev/Synced"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := Load(ruleFile(tt.rules), Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]conditions{}
			for _, r := range rs.Rules {
				got[r.Name] = conditions{r.ReadyCondition, r.SyncedCondition}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnotherStatusWriterChangesTheFingerprint(t *testing.T) {
	a := statusRule("a", "example.com/v1", "webapps", `{url: "x"}`)
	alone := loadRule(t, a, Options{})
	shared := loadRule(t, a+statusRule("b", "example.com/v1", "webapps", `{ready: "y"}`), Options{})
	unrelated := loadRule(t, a+statusRule("b", "example.com/v1", "databases", `{ready: "y"}`), Options{})
	if alone.Fingerprint == shared.Fingerprint {
		t.Error("the fingerprint did not change when the rule's conditions did")
	}
	if alone.Fingerprint != unrelated.Fingerprint {
		t.Error("a rule on another resource changed the fingerprint")
	}
}
