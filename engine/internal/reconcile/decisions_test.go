package reconcile

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clienttesting "k8s.io/client-go/testing"
)

// fakeChildren: a ConfigMap per widget, a second one only while spec.extra is set, and
// the first one's message in the status.
const fakeChildren = `      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata:
            name: ${parent.metadata.name}-config
          data:
            message: ${parent.spec.message}
      - id: extra
        when: parent.spec.?extra.orValue(false)
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata:
            name: ${parent.metadata.name}-extra
          data:
            size: ${string(parent.spec.message.size())}
    status:
      fields:
        message: ${children.config.data.message}
`

func fakeWidget(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "engine.kubecel.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "ns", "uid": "00000000-0000-0000-0000-0000000000aa"},
		"spec":     spec,
	}}
}

// setSpec replaces the stored widget's spec, as a user's edit would.
func (r *fakeRig) setSpec(t *testing.T, spec map[string]any) {
	t.Helper()
	stored, err := r.api.Tracker().Get(widgetGVR, "ns", "w")
	if err != nil {
		t.Fatal(err)
	}
	w := r.api.stamp(stored.(*unstructured.Unstructured).DeepCopy())
	w.Object["spec"] = spec
	if err := r.api.Tracker().Update(widgetGVR, w, "ns"); err != nil {
		t.Fatal(err)
	}
	r.waitCached(t, widgetGVR, "ns", "w")
	r.api.writes()
}

// converge reconciles the widget until a turn writes nothing, and returns the writes of
// the first turn.
func (r *fakeRig) converge(t *testing.T) []string {
	t.Helper()
	var first []string
	for turn := range 5 {
		if _, err := r.reconcile(t, "ns", "w"); err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		w := describe(r.api.writes())
		if turn == 0 {
			first = w
		}
		if len(w) == 0 {
			return first
		}
		for _, name := range []string{"w-config", "w-extra"} {
			if _, err := r.api.Tracker().Get(cmGVR, "ns", name); err == nil {
				r.waitCached(t, cmGVR, "ns", name)
			}
		}
		r.waitCached(t, widgetGVR, "ns", "w")
	}
	t.Fatal("the widget still sends writes after 5 turns")
	return nil
}

// TestDecisionsOnAFake: what a reconcile sends, decided from what the caches show.
func TestDecisionsOnAFake(t *testing.T) {
	t.Run("a new parent gets its children, then nothing more is sent", func(t *testing.T) {
		r := newFakeRig(t, fakeChildren, false, fakeWidget(map[string]any{"message": "hi"}))
		first := r.converge(t)
		want := []string{"patch configmaps w-config", "patch widgets/status w"}
		if diff := cmp.Diff(want, first); diff != "" {
			t.Errorf("first turn's writes (-want +got):\n%s", diff)
		}
		if _, err := r.reconcile(t, "ns", "w"); err != nil {
			t.Fatal(err)
		}
		if w := describe(r.api.writes()); len(w) > 0 {
			t.Errorf("a converged parent sent %v, want nothing", w)
		}
	})

	t.Run("a child no longer produced is deleted with its UID as precondition", func(t *testing.T) {
		r := newFakeRig(t, fakeChildren, false, fakeWidget(map[string]any{"message": "hi", "extra": true}))
		r.converge(t)
		extra, err := r.api.Tracker().Get(cmGVR, "ns", "w-extra")
		if err != nil {
			t.Fatal(err)
		}
		r.setSpec(t, map[string]any{"message": "hi"})
		if _, err := r.reconcile(t, "ns", "w"); err != nil {
			t.Fatal(err)
		}
		var deletes []clienttesting.DeleteActionImpl
		for _, a := range r.api.writes() {
			if d, ok := a.(clienttesting.DeleteActionImpl); ok {
				deletes = append(deletes, d)
			}
		}
		if len(deletes) != 1 || deletes[0].GetName() != "w-extra" {
			t.Fatalf("deletes = %+v, want one of w-extra", deletes)
		}
		pre := deletes[0].DeleteOptions.Preconditions
		if pre == nil || pre.UID == nil || *pre.UID != extra.(*unstructured.Unstructured).GetUID() {
			t.Errorf("delete preconditions = %+v, want the cached child's UID", pre)
		}
	})

	t.Run("an evaluation error deletes nothing", func(t *testing.T) {
		r := newFakeRig(t, fakeChildren, false, fakeWidget(map[string]any{"message": "hi", "extra": true}))
		r.converge(t)
		r.setSpec(t, map[string]any{"extra": true}) // no message: both children fail to evaluate
		_, err := r.reconcile(t, "ns", "w")
		if err == nil || !IsTerminal(err) || !strings.Contains(err.Error(), `"fake"`) {
			t.Errorf("error = %v, want a terminal evaluation error naming the rule", err)
		}
		for _, a := range r.api.writes() {
			if a.GetVerb() != "patch" || a.GetSubresource() != "status" {
				t.Errorf("an evaluation error sent %s %s, want only the status", a.GetVerb(), a.GetResource().Resource)
			}
		}
	})

	t.Run("an object at a child's name without this installation's proof is not written", func(t *testing.T) {
		foreign := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "w-config", "namespace": "ns", "labels": map[string]any{"app.kubernetes.io/managed-by": "kubecel"}},
			"data":     map[string]any{"message": "theirs"},
		}}
		r := newFakeRig(t, fakeChildren, false, fakeWidget(map[string]any{"message": "hi"}), foreign)
		_, err := r.reconcile(t, "ns", "w")
		if !isConflict(err) {
			t.Errorf("error = %v, want a ChildExists conflict", err)
		}
		for _, a := range r.api.writes() {
			if p, ok := a.(clienttesting.PatchActionImpl); ok && p.GetName() == "w-config" && !strings.Contains(string(p.GetPatch()), createOnly) {
				t.Errorf("the foreign object was written: %s", p.GetPatch())
			}
			if a.GetVerb() == "delete" {
				t.Errorf("a delete was sent: %v", describe([]clienttesting.Action{a}))
			}
		}
		stored, err := r.api.Tracker().Get(cmGVR, "ns", "w-config")
		if err != nil {
			t.Fatal(err)
		}
		if got := stored.(*unstructured.Unstructured).Object["data"]; !cmp.Equal(got, map[string]any{"message": "theirs"}) {
			t.Errorf("foreign data = %v, want it untouched", got)
		}
	})

	t.Run("a dry run sends every write with DryRun=All", func(t *testing.T) {
		r := newFakeRig(t, fakeChildren, true, fakeWidget(map[string]any{"message": "hi", "extra": true}))
		if _, err := r.reconcile(t, "ns", "w"); err != nil {
			t.Fatal(err)
		}
		writes := r.api.writes()
		if len(writes) == 0 {
			t.Fatal("a dry run of a new parent sent nothing")
		}
		for _, a := range writes {
			if opts := dryRunOf(a); !cmp.Equal(opts, []string{metav1.DryRunAll}) {
				t.Errorf("%v sent with DryRun=%v", describe([]clienttesting.Action{a}), opts)
			}
		}
		if _, err := r.api.Tracker().Get(cmGVR, "ns", "w-config"); err == nil {
			t.Error("a dry run stored a child")
		}
	})
}

func dryRunOf(a clienttesting.Action) []string {
	switch a := a.(type) {
	case clienttesting.PatchActionImpl:
		return a.PatchOptions.DryRun
	case clienttesting.DeleteActionImpl:
		return a.DeleteOptions.DryRun
	case clienttesting.CreateActionImpl:
		return a.CreateOptions.DryRun
	case clienttesting.UpdateActionImpl:
		return a.UpdateOptions.DryRun
	}
	return nil
}
