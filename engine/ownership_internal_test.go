package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/rules"
)

// TestCreateNeverAdopts: a child the caches do not show is created only when its name is
// free. An existing object is applied only when it carries this rule's and parent's
// labels, or when the child opts in with adopt: true and the object has no controller and
// no other kubecel parent; otherwise it is a conflict and the object is left unchanged.
func TestCreateNeverAdopts(t *testing.T) {
	c, ns := newTestController(t)
	const uid = "aaaaaaaa-0000-0000-0000-000000000001"
	parent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "parent", "namespace": ns, "uid": uid},
	}}
	ours := map[string]any{rules.LabelManagedBy: rules.ManagedByValue, rules.LabelRule: "own", rules.LabelParentUID: uid, rules.LabelChild: "cm"}
	controller := true
	tests := []struct {
		name     string
		existing map[string]any // metadata of an object already there; nil for none
		adopt    bool
		want     string // "created", "applied" or "conflict"
	}{
		{name: "free", want: "created"},
		{name: "foreign", existing: map[string]any{"labels": map[string]any{"team": "x"}}, want: "conflict"},
		{name: "foreign-adopt", existing: map[string]any{}, adopt: true, want: "applied"},
		{name: "controlled-adopt", existing: map[string]any{"ownerReferences": []any{map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "name": "boss", "uid": "bbbbbbbb-0000-0000-0000-000000000002", "controller": controller,
		}}}, adopt: true, want: "conflict"},
		{name: "other-parent", existing: map[string]any{"labels": map[string]any{
			rules.LabelManagedBy: rules.ManagedByValue, rules.LabelRule: "own", rules.LabelParentUID: "cccccccc-0000-0000-0000-000000000003", rules.LabelChild: "cm",
		}}, adopt: true, want: "conflict"},
		{name: "other-rule", existing: map[string]any{"labels": map[string]any{
			rules.LabelManagedBy: rules.ManagedByValue, rules.LabelRule: "another", rules.LabelParentUID: uid, rules.LabelChild: "cm",
		}}, want: "conflict"},
		{name: "ours-not-cached-yet", existing: map[string]any{"labels": ours}, want: "applied"},
		{name: "left-by-a-removed-rule", existing: map[string]any{"labels": map[string]any{
			rules.LabelManagedBy: rules.ManagedByValue, rules.LabelRule: "removed", rules.LabelParentUID: uid, rules.LabelChild: "cm",
		}}, want: "applied"},
	}
	// "another" runs: its children are not this rule's to take.
	c.rules["another"] = &ruleState{rule: &rules.Rule{Name: "another"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &ruleState{
				rule: &rules.Rule{Name: "own", Children: []*rules.Child{{ID: "cm", Adopt: tt.adopt}}},
				children: map[schema.GroupKind]*childKind{
					{Kind: "ConfigMap"}: {kindInfo: kindInfo{GVR: cmGVR, Namespaced: true}},
				},
			}
			name := "cm-" + tt.name
			var before *unstructured.Unstructured
			if tt.existing != nil {
				md := tt.existing
				md["name"], md["namespace"] = name, ns
				obj := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": map[string]any{"owner": "someone"},
				}}
				var err error
				if before, err = c.client.Resource(cmGVR).Namespace(ns).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			desired := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": name, "namespace": ns, "labels": ours},
				"data":     map[string]any{"owner": "kubecel"},
			}}
			got, err := c.create(t.Context(), st, parent, "cm", desired)
			after, gerr := c.client.Resource(cmGVR).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
			if gerr != nil {
				t.Fatal(gerr)
			}
			switch tt.want {
			case "conflict":
				if !isConflict(err) {
					t.Fatalf("create: err = %v, want a conflict", err)
				}
				if after.GetResourceVersion() != before.GetResourceVersion() {
					t.Errorf("the existing object was written: %s", cmp.Diff(before.Object, after.Object))
				}
			case "created", "applied":
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				if d := cmp.Diff(map[string]any{"owner": "kubecel"}, after.Object["data"]); d != "" {
					t.Errorf("data (-want +got):\n%s", d)
				}
				if got.GetUID() != after.GetUID() {
					t.Errorf("returned uid %s, stored %s", got.GetUID(), after.GetUID())
				}
				if before != nil && before.GetUID() != after.GetUID() {
					t.Errorf("the object was replaced")
				}
				if tt.want == "created" && before != nil || tt.want == "applied" && before == nil {
					t.Errorf("want %s", tt.want)
				}
			}
		})
	}
}

// TestHolderOf names who holds an object that is not a rule's child of a parent.
func TestHolderOf(t *testing.T) {
	controller := true
	tests := []struct {
		name   string
		labels map[string]string
		ann    map[string]string
		owners []metav1.OwnerReference
		want   string
	}{
		{name: "ours", labels: map[string]string{rules.LabelManagedBy: rules.ManagedByValue, rules.LabelRule: "r", rules.LabelParentUID: "u1"}, want: ""},
		{name: "another parent", labels: map[string]string{rules.LabelManagedBy: rules.ManagedByValue, rules.LabelRule: "r", rules.LabelParentUID: "u2"},
			ann: map[string]string{rules.AnnotationParent: "example.com/webapps/ns/other"}, want: `belongs to parent example.com/webapps/ns/other of rule "r"`},
		{name: "another rule", labels: map[string]string{rules.LabelManagedBy: rules.ManagedByValue, rules.LabelRule: "s", rules.LabelParentUID: "u1"},
			want: `belongs to parent uid u1 of rule "s"`},
		{name: "a removed rule of the same parent", labels: map[string]string{rules.LabelManagedBy: rules.ManagedByValue, rules.LabelRule: "gone", rules.LabelParentUID: "u1"}, want: ""},
		{name: "a removed rule of another parent", labels: map[string]string{rules.LabelManagedBy: rules.ManagedByValue, rules.LabelRule: "gone", rules.LabelParentUID: "u2"},
			want: `belongs to parent uid u2 of rule "gone"`},
		{name: "labels copied without managed-by", labels: map[string]string{rules.LabelRule: "r", rules.LabelParentUID: "u1"}, want: "was not created by kubecel for this parent"},
		{name: "controlled", owners: []metav1.OwnerReference{{Kind: "Deployment", Name: "web", UID: types.UID("x"), Controller: &controller}},
			want: "is controlled by Deployment web"},
		{name: "foreign", want: "was not created by kubecel for this parent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live := func(rule string) bool { return rule == "r" || rule == "s" }
			if got := holderOf("r", "u1", tt.labels, tt.ann, tt.owners, live); got != tt.want {
				t.Errorf("holderOf = %q, want %q", got, tt.want)
			}
		})
	}
}
