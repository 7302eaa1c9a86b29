package engine_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

// The tests in this file play attackers who may write some objects, and check that
// kubecel never takes an object for a child because of what anyone who can write it can
// write: labels, annotations, owner references.

// tenant returns a client that acts as user, who may do verbs on configmaps in namespace
// ns and nothing else.
func tenant(t *testing.T, user, ns string, verbs ...string) dynamic.Interface {
	t.Helper()
	kube := testenv.Kube(t)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}}}
	if _, err := kube.RbacV1().Roles(ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, verb := range verbs {
		testenv.WaitAllowed(t, user, authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "configmaps"})
	}
	cfg := rest.CopyConfig(testenv.Config(t))
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return dynamic.NewForConfigOrDie(cfg)
}

// namespace creates namespace name for the test.
func namespace(t *testing.T, name string) {
	t.Helper()
	kube := testenv.Kube(t)
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(t.Context(), name, metav1.DeleteOptions{}) })
}

// lookalike is a ConfigMap in ns that carries kubecel's labels and annotations for
// child id of parent (under rule), with data.
func lookalike(ns, name, rule string, parent *unstructured.Unstructured, id string, data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns,
			"labels": map[string]any{contract.LabelManagedBy: contract.ManagedByValue, contract.LabelRule: rule,
				contract.LabelParentUID: string(parent.GetUID()), contract.LabelChild: id, contract.LabelInstallation: contract.DefaultInstallation},
			"annotations": map[string]any{contract.AnnotationParent: "engine.kubecel.dev/widgets/" + parent.GetNamespace() + "/" + parent.GetName()},
		},
		"data": data,
	}}
}

// twoTenantsRuleHead is widgetRuleHead for the Widgets of the fixture's namespace
// (tenant B) and of 0-<it> (tenant A, which sorts first); a test appends the children.
var twoTenantsRuleHead = func() string {
	const one, two = "namespaces: [{{.NS}}]", "namespaces: [{{.NS}}, 0-{{.NS}}]"
	if !strings.Contains(widgetRuleHead, one) {
		panic("widgetRuleHead no longer names the fixture's namespace as " + one)
	}
	return strings.Replace(widgetRuleHead, one, two, 1)
}()

// injectionRules make a config child, a summary child that reads it, and a status field
// that reads it too.
var injectionRules = twoTenantsRuleHead + `      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-config"}
          data: {v: "${parent.spec.v}"}
      - id: summary
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-summary"}
          data: {seen: "${children.config.data.v}"}
    status:
      fields:
        seen: "${children.config.data.v}"
`

// TestForgedChildInjectsNothing: tenant A, who may write ConfigMaps only in its own
// namespace, makes one there named like tenant B's child and labelled as it. B's other
// child and B's status read B's own child, and A's object is never written or deleted.
func TestForgedChildInjectsNothing(t *testing.T) {
	f := startController(t, injectionRules)
	nsA := "0-" + f.ns
	namespace(t, nsA)
	attacker := tenant(t, "tenant-a", nsA, "get", "list", "create", "update", "patch")
	b := f.create(widgets, widget(f.ns, "web", map[string]any{"v": "b-1"}))
	f.waitFor(widgets, f.ns, "web", statusSeen("b-1"))

	forged, err := attacker.Resource(configMaps).Namespace(nsA).Create(t.Context(),
		lookalike(nsA, "web-config", f.rule, b, "config", map[string]any{"v": "injected"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.patchSpec(widgets, f.ns, "web", `{"v":"b-2"}`)
	f.waitFor(widgets, f.ns, "web", statusSeen("b-2"))
	f.waitIdle()
	if got := nestedString(f.waitFor(configMaps, f.ns, "web-summary", nil), "data", "seen"); got != "b-2" {
		t.Errorf("B's summary child reads %q, want b-2 (its own config child)", got)
	}
	if got, _ := f.get(widgets, f.ns, "web"); nestedString(got, "status", "seen") != "b-2" {
		t.Errorf("B's status.seen = %q, want b-2", nestedString(got, "status", "seen"))
	}
	after, err := f.get(configMaps, nsA, "web-config")
	if err != nil {
		t.Fatalf("tenant A's object: %v (kubecel must never delete an object it did not make)", err)
	}
	if after.GetResourceVersion() != forged.GetResourceVersion() {
		t.Errorf("tenant A's object was written by kubecel")
	}
}

// statusSeen checks a widget's status.seen.
func statusSeen(want string) func(*unstructured.Unstructured) (bool, string) {
	return func(w *unstructured.Unstructured) (bool, string) {
		got := nestedString(w, "status", "seen")
		return got == want, fmt.Sprintf("status.seen = %q, want %q", got, want)
	}
}

// TestLabelPatcherCannotDelete: a user who may only read and patch ConfigMaps in
// another namespace puts kubecel's labels and annotations (copied from a real child,
// its proof included) on an important ConfigMap there. kubecel neither deletes nor
// writes it.
func TestLabelPatcherCannotDelete(t *testing.T) {
	f := startController(t, injectionRules)
	prod := testenv.Namespace(t)
	important := f.create(configMaps, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "important", "namespace": prod}, "data": map[string]any{"keep": "me"}})
	patcher := tenant(t, "patcher", prod, "get", "patch")
	b := f.create(widgets, widget(f.ns, "web", map[string]any{"v": "1"}))
	child := f.waitFor(configMaps, f.ns, "web-config", nil)

	md := map[string]any{
		"labels":      maps.Clone(child.GetLabels()),
		"annotations": maps.Clone(child.GetAnnotations()),
	}
	// A child id the rule does not produce: pruned if it were taken for a child.
	md["labels"].(map[string]string)[contract.LabelChild] = "retired"
	patch, err := (&unstructured.Unstructured{Object: map[string]any{"metadata": md}}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := patcher.Resource(configMaps).Namespace(prod).Patch(t.Context(), "important", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	labelled, err := f.get(configMaps, prod, "important")
	if err != nil {
		t.Fatal(err)
	}
	if labelled.GetLabels()[contract.LabelParentUID] != string(b.GetUID()) {
		t.Fatalf("the patch did not label the object: %v", labelled.GetLabels())
	}
	f.patchSpec(widgets, f.ns, "web", `{"v":"2"}`)
	f.waitFor(configMaps, f.ns, "web-config", func(cm *unstructured.Unstructured) (bool, string) {
		return nestedString(cm, "data", "v") == "2", "web-config not updated"
	})
	f.waitIdle()
	after, err := f.get(configMaps, prod, "important")
	if err != nil {
		t.Fatalf("%s/important: %v (a label patcher made kubecel delete it)", prod, err)
	}
	if after.GetResourceVersion() != labelled.GetResourceVersion() || important.GetUID() != after.GetUID() {
		t.Errorf("%s/important was written by kubecel", prod)
	}
}

// finalizerRules give each widget a child in 0-<ns>, so that the rule's finalizer
// guards it.
const finalizerRules = widgetRuleHead + `      - id: far
        crossNamespace: true
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-far", namespace: "0-{{.NS}}"}
`

// TestForgedChildBlocksNoDeletion: tenant A labels a ConfigMap of its namespace as a
// child of B's parent, holds it with a finalizer and deletes it. Deleting B's parent,
// which carries the rule's finalizer, does not wait for A's object.
func TestForgedChildBlocksNoDeletion(t *testing.T) {
	f := startController(t, finalizerRules)
	nsA := "0-" + f.ns
	namespace(t, nsA)
	attacker := tenant(t, "tenant-a", nsA, "get", "create", "update", "patch", "delete")
	b := f.create(widgets, widget(f.ns, "web", nil))
	f.waitFor(configMaps, nsA, "web-far", nil)
	f.waitFor(widgets, f.ns, "web", func(w *unstructured.Unstructured) (bool, string) {
		return len(w.GetFinalizers()) > 0, "no finalizer yet"
	})
	hold := lookalike(nsA, "web-hostage", f.rule, b, "far", nil)
	hold.SetFinalizers([]string{"example.com/hold"})
	if _, err := attacker.Resource(configMaps).Namespace(nsA).Create(t.Context(), hold, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = attacker.Resource(configMaps).Namespace(nsA).Patch(t.Context(), "web-hostage", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := attacker.Resource(configMaps).Namespace(nsA).Delete(t.Context(), "web-hostage", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.deleteWidget("web", metav1.DeletePropagationBackground)
	f.waitGone(widgets, f.ns, "web")
	f.waitGone(configMaps, nsA, "web-far")
	if _, err := f.get(configMaps, nsA, "web-hostage"); err != nil {
		t.Errorf("tenant A's object: %v", err)
	}
}

// TestLookalikesOutsideTheRulesStay: objects another client made in a namespace the
// rules do not serve, labelled as children of a parent there (kubecel's labels and a
// controller owner reference to that parent), are neither deleted nor written.
func TestLookalikesOutsideTheRulesStay(t *testing.T) {
	f := startController(t, injectionRules)
	other := testenv.Namespace(t)
	p := f.create(widgets, widget(other, "p", map[string]any{"v": "x"}))
	var made []*unstructured.Unstructured
	for i := range 5 {
		obj := lookalike(other, fmt.Sprintf("p-%d", i), f.rule, p, "config", map[string]any{"n": fmt.Sprint(i)})
		obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "engine.kubecel.dev/v1", Kind: "Widget", Name: "p", UID: p.GetUID(), Controller: ptrTo(true)}})
		made = append(made, f.create(configMaps, obj.Object))
	}
	// A parent the rule serves, whose child shows that the controller is at work, and a
	// relabelled parent there, whose rule's release would reach the look-alikes.
	f.create(widgets, widget(f.ns, "web", map[string]any{"v": "1"}))
	f.waitFor(widgets, f.ns, "web", statusSeen("1"))
	if _, err := testenv.Dynamic(t).Resource(widgets).Namespace(other).Patch(t.Context(), "p", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitIdle()
	for _, want := range made {
		got, err := f.get(configMaps, other, want.GetName())
		if err != nil {
			t.Errorf("%s: %v (kubecel deleted an object it did not make)", want.GetName(), err)
			continue
		}
		if got.GetResourceVersion() != want.GetResourceVersion() {
			t.Errorf("%s was written by kubecel", want.GetName())
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// writesTo lists the write requests of userAgent to objects of namespace ns that the
// server carried out, as "verb resource/name", leaving out Events.
func writesTo(t *testing.T, ns, userAgent string) []string {
	t.Helper()
	events, err := testenv.ControlPlane(t).AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range events {
		if e.ObjectRef.Namespace == ns && e.UserAgent == userAgent && e.ResponseStatus.Code < 300 && e.ObjectRef.Resource != "events" {
			w := e.Verb + " " + e.ObjectRef.Resource + "/" + e.ObjectRef.Name
			if e.ObjectRef.Subresource != "" {
				w += "/" + e.ObjectRef.Subresource
			}
			out = append(out, w)
		}
	}
	return out
}
