package apischema

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stored are objects as the API server returns them, for counting what a change breaks.
var stored = []map[string]any{
	{"spec": map[string]any{"image": "a", "replicas": int64(1), "tier": "web", "port": int64(80), "tags": []any{"x", "x"}}},
	{"spec": map[string]any{"image": "b", "replicas": int64(5), "tier": "api", "name": "bob"}},
	{"spec": map[string]any{"image": "c", "replicas": int64(12), "tier": "api", "labels": map[string]any{"a": "1"}}},
}

const base = `group: sites.example.com
version: v1
kind: Website
spec:
  image: string | required=true
  replicas: integer | default=1
  tier: string | default=web
  port: integer
  name: string
  tags: "[]string"
  labels: map[string]string
  extra: object
status:
  url: string
`

func TestCompare(t *testing.T) {
	old := parse(t, base).CRD(Conditions{})
	for _, tc := range []struct {
		name string
		// edit replaces one line of base by another ("" removes it), or appends.
		from, to string
		// want are the changes, as Change.String, with how many of stored each breaks
		// (-1 for a change that is not breaking).
		want map[string]int
	}{
		{name: "same", want: map[string]int{}},
		{name: "field added", from: "  extra: object", to: "  extra: object\n  size: integer", want: map[string]int{"spec.size: added": -1}},
		{name: "description", from: "  port: integer", to: `  port: integer | description="the port"`, want: map[string]int{}},
		{name: "field removed", from: "  port: integer", to: "", want: map[string]int{"spec.port: removed: the API server would drop it from every stored object": 1}},
		{name: "type narrowed", from: "  name: string", to: "  name: integer", want: map[string]int{"spec.name: type string -> integer": 1}},
		{name: "integer to number", from: "  port: integer", to: "  port: number", want: map[string]int{"spec.port: type integer -> number (every integer is a number)": -1}},
		{name: "new required", from: "  name: string", to: "  name: string | required=true", want: map[string]int{"spec.name: now required, without a default": 2}},
		{name: "new required with default", from: "  name: string", to: "  name: string | required=true default=x",
			want: map[string]int{"spec.name: now required, with a default that stored objects without it take": -1, "spec.name: default \"x\" added": -1}},
		{name: "enum added", from: "  tier: string | default=web", to: "  tier: string | default=web enum=web", want: map[string]int{`spec.tier: now limited to "web"`: 2}},
		{name: "minimum", from: "  port: integer", to: "  port: integer | minimum=100", want: map[string]int{"spec.port: minimum none -> 100": 1}},
		{name: "maximum", from: "  replicas: integer | default=1", to: "  replicas: integer | default=1 maximum=10", want: map[string]int{"spec.replicas: maximum none -> 10": 1}},
		{name: "maxLength", from: "  image: string | required=true", to: "  image: string | required=true maxLength=0", want: map[string]int{"spec.image: maxLength none -> 0": 3}},
		{name: "pattern", from: "  image: string | required=true", to: `  image: string | required=true pattern="^[ab]$"`, want: map[string]int{`spec.image: pattern "" -> "^[ab]$"`: 1}},
		{name: "list becomes set", from: `  tags: "[]string"`, to: `  tags: "[]string | uniqueItems=true"`, want: map[string]int{"spec.tags: list type atomic -> set": 1}},
		{name: "new rule", from: "  replicas: integer | default=1", to: `  replicas: integer | default=1 validation="self < 10"`, want: map[string]int{`spec.replicas: new rule "self < 10"`: 1}},
		{name: "immutable", from: "  name: string", to: "  name: string | immutable=true", want: map[string]int{`spec.name: new rule "self == oldSelf" (checked on updates only)`: -1}},
		{name: "default changed", from: "  replicas: integer | default=1", to: "  replicas: integer | default=3", want: map[string]int{"spec.replicas: default 1 -> 3: stored objects that do not set it would change": 0}},
		{name: "map values", from: "  labels: map[string]string", to: "  labels: map[string]integer", want: map[string]int{"spec.labels[*]: type string -> integer": 1}},
		{name: "map to object", from: "  labels: map[string]string", to: "  labels: {a: string}", want: map[string]int{"spec.labels: type map[string]string -> an object": 1, "spec.labels.a: added": -1}},
		{name: "free-form to fields", from: "  extra: object", to: "  extra: {a: string}", want: map[string]int{"spec.extra: free-form object -> object with fields: other fields would be dropped": 0}},
		{name: "status is the rules'", from: "  url: string", to: "  url: integer", want: map[string]int{"status.url: type string -> integer": -1}},
		{name: "scope", from: "kind: Website", to: "kind: Website\nscope: Cluster", want: map[string]int{"scope Namespaced -> Cluster: every stored object would be lost to the new scope": 3}},
		{name: "version", from: "version: v1", to: "version: v2", want: map[string]int{"version v2 is new, and the CRD has v1: kubecel does not convert stored objects between versions": 3}},
		{name: "columns", from: "kind: Website", to: "kind: Website\nprinterColumns: [{name: Image, type: string, jsonPath: .spec.image}]", want: map[string]int{"printer columns changed": -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := base
			if tc.from != "" {
				if !strings.Contains(src, tc.from+"\n") {
					t.Fatalf("base has no line %q", tc.from)
				}
				to := tc.to
				if to != "" {
					to += "\n"
				}
				src = strings.Replace(src, tc.from+"\n", to, 1)
			}
			next := parse(t, src).CRD(Conditions{})
			got := map[string]int{}
			for _, c := range Compare(old, next) {
				n := -1
				if c.Breaking {
					n = 0
					for _, obj := range stored {
						if c.Affects(obj) {
							n++
						}
					}
				}
				got[c.String()] = n
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			if same := Same(old, next); same != (tc.name == "same") {
				t.Errorf("Same = %v", same)
			}
		})
	}
}

func TestBreaking(t *testing.T) {
	got := Breaking([]Change{{What: "a", Breaking: true}, {What: "b"}})
	if len(got) != 1 || got[0].What != "a" {
		t.Errorf("Breaking = %v", got)
	}
}
