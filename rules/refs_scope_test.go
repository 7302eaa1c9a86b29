package rules

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRefReach checks that every ref that can reach beyond the parent's own namespace
// says crossNamespace: a selector over Namespaces (for any parent), and a cluster-scoped
// parent's computed namespace or selector across every namespace. The parent's own
// Namespace by name, a literal namespace, and a Namespace parent's own namespace need
// nothing.
func TestRefReach(t *testing.T) {
	tests := []struct {
		name, parent, ref, wantErr string
	}{
		{name: "a namespaced parent's selector over Namespaces", parent: "example.com/v1, resource: webapps",
			ref:     "{id: r, apiVersion: v1, kind: Namespace, selector: {matchLabels: {team: a}}}",
			wantErr: `ref "r": selector: a selector over Namespaces reads every namespace's labels and annotations: it needs crossNamespace: true on the ref`},
		{name: "with crossNamespace", parent: "example.com/v1, resource: webapps",
			ref: "{id: r, apiVersion: v1, kind: Namespace, selector: {matchLabels: {team: a}}, crossNamespace: true}"},
		{name: "the parent's own Namespace by name", parent: "example.com/v1, resource: webapps",
			ref: "{id: r, apiVersion: v1, kind: Namespace, name: '${parent.metadata.namespace}'}"},
		{name: "a cluster-scoped parent's selector over Namespaces", parent: "rbac.authorization.k8s.io/v1, resource: clusterroles",
			ref:     "{id: r, apiVersion: v1, kind: Namespace, selector: {matchLabels: {team: a}}}",
			wantErr: "a selector over Namespaces reads every namespace"},
		{name: "a cluster-scoped parent's computed namespace", parent: "rbac.authorization.k8s.io/v1, resource: clusterroles",
			ref:     "{id: r, apiVersion: v1, kind: Secret, name: db, namespace: '${parent.metadata.labels.ns}'}",
			wantErr: `ref "r": namespace: the parent is cluster-scoped: a namespace computed with ${} can name any namespace, which needs crossNamespace: true on the ref`},
		{name: "with crossNamespace", parent: "rbac.authorization.k8s.io/v1, resource: clusterroles",
			ref: "{id: r, apiVersion: v1, kind: Secret, name: db, namespace: '${parent.metadata.labels.ns}', crossNamespace: true}"},
		{name: "a cluster-scoped parent's literal namespace", parent: "rbac.authorization.k8s.io/v1, resource: clusterroles",
			ref: "{id: r, apiVersion: v1, kind: Secret, name: db, namespace: prod}"},
		{name: "a cluster-scoped parent's selector in every namespace", parent: "rbac.authorization.k8s.io/v1, resource: clusterroles",
			ref:     "{id: r, apiVersion: v1, kind: Secret, selector: {matchLabels: {team: a}}}",
			wantErr: `ref "r": selector: the parent is cluster-scoped: a selector without a namespace reads every namespace, which needs crossNamespace: true on the ref`},
		{name: "a Namespace parent's computed namespace (checked when evaluated)", parent: "v1, resource: namespaces",
			ref: "{id: r, apiVersion: v1, kind: ConfigMap, name: defaults, namespace: '${parent.metadata.name}'}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(ruleFile(`- name: reach
  parent: {apiVersion: `+tt.parent+`}
  refs:
    - `+tt.ref+`
  status:
    fields:
      found: '${has(refs.r) ? "yes" : "no"}'
`), Options{})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tt.wantErr == "" && got != "" || tt.wantErr != "" && !strings.Contains(got, tt.wantErr) {
				t.Errorf("Load() error:\n%s\nwant %q", got, tt.wantErr)
			}
		})
	}
}

// TestRefReachWhenEvaluated checks what only the evaluation can tell: a cluster-scoped
// parent's computed namespace is its own only for a Namespace parent naming itself.
func TestRefReachWhenEvaluated(t *testing.T) {
	objs := Objects{
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "defaults", "namespace": "team-a"}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "defaults", "namespace": "prod"}},
	}
	r := loadRule(t, `- name: reach
  parent: {apiVersion: v1, resource: namespaces}
  refs:
    - {id: r, apiVersion: v1, kind: ConfigMap, name: defaults, namespace: '${has(parent.metadata.labels) && has(parent.metadata.labels.target) ? parent.metadata.labels.target : parent.metadata.name}', optional: true}
  status:
    fields:
      found: '${has(refs.r) ? "yes" : "no"}'
`, Options{})
	ns := func(labels map[string]any) map[string]any {
		md := map[string]any{"name": "team-a"}
		if labels != nil {
			md["labels"] = labels
		}
		return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": md}
	}
	res, err := r.EvaluateWithRefs(t.Context(), ns(nil), Observed{}, objs)
	if err != nil || res.Status["found"] != "yes" {
		t.Errorf("own namespace: status %v, err %v; want it read", res.Status, err)
	}
	_, err = r.EvaluateWithRefs(t.Context(), ns(map[string]any{"target": "prod"}), Observed{}, objs)
	if err == nil || !strings.Contains(err.Error(), "needs crossNamespace: true") {
		t.Errorf("another namespace: err %v, want crossNamespace asked for", err)
	}
}

// TestRefComputedNamespaceWarning: a ref whose namespace (or Namespace name) is computed
// from the parent's data, under a parent that is or may be namespaced and without
// crossNamespace, loads with a warning naming the ref, the field and the expression:
// only the parent's own namespace passes when it is evaluated.
func TestRefComputedNamespaceWarning(t *testing.T) {
	tests := []struct {
		name, parent, ref string
		want              []string // "field: expression" of each warning
	}{
		{name: "a Namespace named by the parent's spec", parent: "example.com/v1, resource: webapps",
			ref: "{id: r, apiVersion: v1, kind: Namespace, name: '${parent.spec.team}'}", want: []string{"name: ${parent.spec.team}"}},
		{name: "a ConfigMap in a namespace from the parent's labels", parent: "apps/v1, resource: deployments",
			ref: "{id: r, apiVersion: v1, kind: ConfigMap, name: c, namespace: '${parent.metadata.labels.ns}'}", want: []string{"namespace: ${parent.metadata.labels.ns}"}},
		{name: "a selector in a computed namespace", parent: "example.com/v1, resource: webapps",
			ref: "{id: r, apiVersion: v1, kind: ConfigMap, namespace: 'x-${parent.spec.env}', selector: {matchLabels: {a: b}}}", want: []string{"namespace: x-${parent.spec.env}"}},
		{name: "the parent's own Namespace", parent: "example.com/v1, resource: webapps",
			ref: "{id: r, apiVersion: v1, kind: Namespace, name: '${parent.metadata.namespace}'}"},
		{name: "the parent's own namespace", parent: "example.com/v1, resource: webapps",
			ref: "{id: r, apiVersion: v1, kind: ConfigMap, name: c, namespace: '${parent.metadata.namespace}'}"},
		{name: "with crossNamespace", parent: "example.com/v1, resource: webapps",
			ref: "{id: r, apiVersion: v1, kind: Namespace, name: '${parent.spec.team}', crossNamespace: true}"},
		{name: "a literal namespace", parent: "example.com/v1, resource: webapps",
			ref: "{id: r, apiVersion: v1, kind: ConfigMap, name: c, namespace: shared, crossNamespace: true}"},
		{name: "a computed name in the parent's namespace", parent: "example.com/v1, resource: webapps",
			ref: "{id: r, apiVersion: v1, kind: ConfigMap, name: '${parent.spec.config}'}"},
		{name: "a cluster-scoped parent's Namespace by name", parent: "rbac.authorization.k8s.io/v1, resource: clusterroles",
			ref: "{id: r, apiVersion: v1, kind: Namespace, name: '${parent.metadata.labels.ns}'}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := Load(ruleFile(`- name: reach
  parent: {apiVersion: `+tt.parent+`}
  refs:
    - `+tt.ref+`
  status:
    fields:
      found: '${has(refs.r) ? "yes" : "no"}'
`), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range rs.Warnings {
				if strings.Contains(w.Message, "the namespace is computed") {
					if w.Rule != "reach" || w.Ref != "r" {
						t.Errorf("warning names rule %q ref %q, want reach and r", w.Rule, w.Ref)
					}
					got = append(got, w.Field+": "+w.Expr)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("computed namespace warnings (-want +got):\n%s", diff)
			}
		})
	}
}
