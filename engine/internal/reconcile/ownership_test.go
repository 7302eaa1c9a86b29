package reconcile

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// TestCreateNeverAdopts: a child the caches do not show is created only when its name is
// free. An existing object is applied only when it carries this installation's proof
// that it is this rule's child of this parent (or of an earlier parent of the same name,
// or of this parent under a removed rule), or when the child opts in with adopt: true and
// the object has no controller and no other kubecel parent; otherwise it is a conflict
// and the object is left unchanged. Labels without the proof count for nothing.
func TestCreateNeverAdopts(t *testing.T) {
	c, ns := newTestReconciler(t)
	const uid = "aaaaaaaa-0000-0000-0000-000000000001"
	parent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "parent", "namespace": ns, "uid": uid},
	}}
	annotation := "/configmaps/" + ns + "/parent"
	labels := func(rule, parentUID string) map[string]any {
		return map[string]any{contract.LabelManagedBy: contract.ManagedByValue, contract.LabelRule: rule, contract.LabelParentUID: parentUID, contract.LabelChild: "cm"}
	}
	ours := labels("own", uid)
	// What a copier writes: kubecel's labels as a real child carries them.
	forged := labels("own", uid)
	forged[contract.LabelInstallation] = testIdentity.Name()
	controller := true
	tests := []struct {
		name     string
		existing map[string]any // metadata of an object already there; nil for none
		proven   bool           // the existing object carries testIdentity's proof of what it claims
		adopt    bool
		// adoptUnproven sets Options.AdoptUnproven (kubecel run --adopt-unproven).
		adoptUnproven bool
		want          string // "created", "applied" or "conflict"
		twin          bool   // a conflict with an object that claims to be this very child
	}{
		{name: "free", want: "created"},
		{name: "foreign", existing: map[string]any{"labels": map[string]any{"team": "x"}}, want: "conflict"},
		{name: "foreign-adopt", existing: map[string]any{}, adopt: true, want: "applied"},
		{name: "controlled-adopt", existing: map[string]any{"ownerReferences": []any{map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "name": "boss", "uid": "bbbbbbbb-0000-0000-0000-000000000002", "controller": controller,
		}}}, adopt: true, want: "conflict"},
		{name: "other-parent", existing: map[string]any{"labels": labels("own", "cccccccc-0000-0000-0000-000000000003"),
			"annotations": map[string]any{contract.AnnotationParent: "/configmaps/" + ns + "/other"}}, proven: true, adopt: true, want: "conflict"},
		{name: "other-rule", existing: map[string]any{"labels": labels("another", uid)}, proven: true, want: "conflict"},
		{name: "ours-not-cached-yet", existing: map[string]any{"labels": ours, "annotations": map[string]any{contract.AnnotationParent: annotation}}, proven: true, want: "applied"},
		{name: "left-by-a-removed-rule", existing: map[string]any{"labels": labels("removed", uid)}, proven: true, want: "applied"},
		{name: "left-by-an-earlier-parent-of-the-same-name", existing: map[string]any{"labels": labels("own", "dddddddd-0000-0000-0000-000000000004"),
			"annotations": map[string]any{contract.AnnotationParent: annotation}}, proven: true, want: "applied"},
		// What anyone who may label an object can write: kubecel's labels, without the proof.
		{name: "forged-labels", existing: map[string]any{"labels": forged, "annotations": map[string]any{contract.AnnotationParent: annotation}}, want: "conflict", twin: true},
		{name: "forged-labels-adopt", existing: map[string]any{"labels": forged}, adopt: true, want: "conflict", twin: true},
		{name: "forged-labels-adopt-unproven", existing: map[string]any{"labels": forged}, adoptUnproven: true, want: "conflict", twin: true},
		// Made by a kubecel before proofs: no installation label, no proof.
		{name: "legacy", existing: map[string]any{"labels": ours}, want: "conflict"},
		{name: "legacy-adopt-unproven", existing: map[string]any{"labels": ours}, adoptUnproven: true, want: "applied"},
		{name: "legacy-of-another-parent-adopt-unproven", existing: map[string]any{"labels": labels("own", "cccccccc-0000-0000-0000-000000000003")}, adoptUnproven: true, want: "conflict"},
		{name: "forged-removed-rule", existing: map[string]any{"labels": labels("removed", uid)}, want: "conflict"},
		{name: "forged-earlier-parent", existing: map[string]any{"labels": labels("own", "dddddddd-0000-0000-0000-000000000004"),
			"annotations": map[string]any{contract.AnnotationParent: annotation}}, want: "conflict"},
		{name: "proof-of-another-object", existing: map[string]any{"labels": forged, "annotations": map[string]any{
			contract.AnnotationParent: annotation, contract.AnnotationProof: testIdentity.Proof(rules.ChildClaim{GK: schema.GroupKind{Kind: "ConfigMap"}, Namespace: ns,
				Name: "cm-elsewhere", Installation: testIdentity.Name(), Rule: "own", ParentUID: uid, Parent: annotation, Child: "cm"}),
		}}, want: "conflict", twin: true},
		{name: "another-origin", existing: map[string]any{"labels": ours, "annotations": map[string]any{
			contract.AnnotationParent: annotation, contract.AnnotationOrigin: "configmap kubecel-system/team-b"}}, proven: true, want: "conflict"},
	}
	// "another" runs: its children are not this rule's to take.
	c.children.opts.Known = func(name string) bool { return name == "another" }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &watch.Rule{
				Rule:       &rules.Rule{Name: "own", Children: []*rules.Child{{ID: "cm", Adopt: tt.adopt}}},
				ParentKind: watch.Kind{GVR: cmGVR, Namespaced: true},
				Children: map[schema.GroupKind]*watch.ChildKind{
					{Kind: "ConfigMap"}: {Kind: watch.Kind{GVR: cmGVR, Namespaced: true}},
				},
			}
			c.children.opts.AdoptUnproven = tt.adoptUnproven
			name := "cm-" + tt.name
			var before *unstructured.Unstructured
			if tt.existing != nil {
				md := tt.existing
				md["name"], md["namespace"] = name, ns
				obj := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": map[string]any{"owner": "someone"},
				}}
				if tt.proven {
					sign(t, obj)
				}
				var err error
				if before, err = c.opts.Client.Resource(cmGVR).Namespace(ns).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			desired := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": name, "namespace": ns, "labels": ours},
				"data":     map[string]any{"owner": "kubecel"},
			}}
			got, err := c.children.create(t.Context(), st, parent, "cm", desired)
			after, gerr := c.opts.Client.Resource(cmGVR).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
			if gerr != nil {
				t.Fatal(gerr)
			}
			switch tt.want {
			case "conflict":
				if !isConflict(err) {
					t.Fatalf("create: err = %v, want a conflict", err)
				}
				if isTwin(err) != tt.twin {
					t.Errorf("twin = %v, want %v: %v", isTwin(err), tt.twin, err)
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

// TestDecide decides, from an object's proven claim, whether it is a rule's child of a
// parent, and names its holder otherwise, without naming a parent of another namespace.
func TestDecide(t *testing.T) {
	p := rules.ParentRef{Resource: schema.GroupResource{Group: "example.com", Resource: "webapps"}, Namespace: "ns", Name: "web", UID: "u1", Namespaced: true}
	tests := []struct {
		name   string
		claim  rules.ChildClaim
		proven bool
		want   holding
		holder string
	}{
		{name: "ours", claim: rules.ChildClaim{Rule: "r", ParentUID: "u1", Parent: p.Annotation()}, proven: true, want: ours},
		{name: "ours without proof", claim: rules.ChildClaim{Rule: "r", ParentUID: "u1", Parent: p.Annotation()}, want: foreign},
		{name: "another parent here", claim: rules.ChildClaim{Rule: "r", ParentUID: "u2", Parent: "example.com/webapps/ns/other"}, proven: true,
			want: foreign, holder: `belongs to parent other of rule "r"`},
		{name: "another parent elsewhere", claim: rules.ChildClaim{Rule: "r", ParentUID: "u2", Parent: "example.com/webapps/secret-team/db"}, proven: true,
			want: foreign, holder: `belongs to a parent in another namespace of rule "r"`},
		{name: "an earlier parent of the same name", claim: rules.ChildClaim{Rule: "r", ParentUID: "u0", Parent: p.Annotation()}, proven: true, want: leftover},
		{name: "an earlier parent of the same name under another rule", claim: rules.ChildClaim{Rule: "s", ParentUID: "u0", Parent: p.Annotation()}, proven: true,
			want: foreign, holder: `belongs to parent web of rule "s"`},
		{name: "another rule", claim: rules.ChildClaim{Rule: "s", ParentUID: "u1", Parent: p.Annotation()}, proven: true,
			want: foreign, holder: `belongs to parent web of rule "s"`},
		{name: "a removed rule of the same parent", claim: rules.ChildClaim{Rule: "gone", ParentUID: "u1"}, proven: true, want: ours},
		{name: "a removed rule of another origin", claim: rules.ChildClaim{Rule: "gone", Origin: "configmap x/y", ParentUID: "u1", Parent: p.Annotation()}, proven: true,
			want: foreign, holder: `belongs to parent web of rule "gone"`},
		{name: "a removed rule of another parent", claim: rules.ChildClaim{Rule: "gone", ParentUID: "u2", Parent: "example.com/webapps/ns/other"}, proven: true,
			want: foreign, holder: `belongs to parent other of rule "gone"`},
		{name: "the same rule name from another origin", claim: rules.ChildClaim{Rule: "r", Origin: "configmap x/y", ParentUID: "u1", Parent: p.Annotation()}, proven: true,
			want: foreign, holder: `belongs to parent web of rule "r"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live := func(rule string) bool { return rule == "r" || rule == "s" }
			got, holder := decide(&rules.Rule{Name: "r"}, p, tt.claim, tt.proven, live)
			if got != tt.want || holder != tt.holder {
				t.Errorf("decide = %v, %q; want %v, %q", got, holder, tt.want, tt.holder)
			}
		})
	}
}
