package engine_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/engine/plan"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

// keepRules has a child kept when no longer produced (its `when` reads the spec) and a
// child kept when the parent is deleted, next to a plain one.
const keepRules = widgetRuleHead + `      - id: cache
        when: "has(parent.spec.cache) && parent.spec.cache"
        lifecycle: {onRemove: Keep}
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-cache"}
          data: {kind: cache}
      - id: data
        lifecycle: {onParentDelete: Keep}
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-data"}
          data: {kind: data}
      - id: plain
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-plain"}
          data: {kind: plain}
    status:
      fields:
        name: ${parent.metadata.name}
`

// released checks that obj carries nothing of kubecel's but the release mark.
func released(f *fixture, parentName string) func(*unstructured.Unstructured) (bool, string) {
	return func(o *unstructured.Unstructured) (bool, string) {
		l, a := o.GetLabels(), o.GetAnnotations()
		for _, k := range []string{contract.LabelManagedBy, contract.LabelRule, contract.LabelParentUID, contract.LabelChild} {
			if _, ok := l[k]; ok {
				return false, fmt.Sprintf("label %s still there: %v", k, l)
			}
		}
		if _, ok := a[contract.AnnotationParent]; ok {
			return false, fmt.Sprintf("annotation %s still there", contract.AnnotationParent)
		}
		if len(o.GetOwnerReferences()) > 0 {
			return false, fmt.Sprintf("owner references %v", o.GetOwnerReferences())
		}
		want := "engine.kubecel.dev/widgets/" + f.ns + "/" + parentName
		if l[contract.LabelReleased] != f.rule || a[contract.AnnotationReleasedFrom] != want {
			return false, fmt.Sprintf("release mark: label %q, annotation %q; want %q, %q", l[contract.LabelReleased], a[contract.AnnotationReleasedFrom], f.rule, want)
		}
		return true, ""
	}
}

// TestKeepOnRemove: a child with lifecycle onRemove: Keep whose `when` turns false is
// released, not pruned, and survives the parent's deletion.
func TestKeepOnRemove(t *testing.T) {
	f := startController(t, keepRules)
	f.create(widgets, widget(f.ns, "w1", map[string]any{"cache": true}))
	f.waitFor(configMaps, f.ns, "w1-cache", func(o *unstructured.Unstructured) (bool, string) {
		return len(o.GetOwnerReferences()) == 1, "no owner reference yet"
	})
	f.patchSpec(widgets, f.ns, "w1", `{"cache":false}`)
	f.waitFor(configMaps, f.ns, "w1-cache", released(f, "w1"))
	f.deleteWidget("w1", metav1.DeletePropagationBackground)
	f.waitGone(widgets, f.ns, "w1")
	f.waitGone(configMaps, f.ns, "w1-plain")
	f.waitIdle()
	if _, err := f.get(configMaps, f.ns, "w1-cache"); err != nil {
		t.Errorf("released child after the parent's deletion: %v", err)
	}
}

// TestKeepOnParentDelete: a child with lifecycle onParentDelete: Keep has no owner
// reference, its parent gets the rule's finalizer, and deleting the parent releases the
// child (the plain one is deleted) and completes. A new parent of the same name does not
// take the released object: it is a ChildExists conflict.
func TestKeepOnParentDelete(t *testing.T) {
	f := startController(t, keepRules)
	f.create(widgets, widget(f.ns, "w1", map[string]any{}))
	f.waitFor(configMaps, f.ns, "w1-data", func(o *unstructured.Unstructured) (bool, string) {
		return len(o.GetOwnerReferences()) == 0, fmt.Sprintf("owner references %v", o.GetOwnerReferences())
	})
	f.waitFor(widgets, f.ns, "w1", func(o *unstructured.Unstructured) (bool, string) {
		return slices.Contains(o.GetFinalizers(), contract.FinalizerFor(f.rule)), fmt.Sprintf("finalizers %v", o.GetFinalizers())
	})
	f.deleteWidget("w1", metav1.DeletePropagationBackground)
	f.waitGone(widgets, f.ns, "w1")
	f.waitGone(configMaps, f.ns, "w1-plain")
	f.waitFor(configMaps, f.ns, "w1-data", released(f, "w1"))

	f.create(widgets, widget(f.ns, "w1", map[string]any{}))
	f.waitFor(widgets, f.ns, "w1", func(o *unstructured.Unstructured) (bool, string) {
		status, reason, _ := testenv.Condition(o, contract.ConditionSynced)
		return status == "False" && reason == contract.ReasonChildExists, fmt.Sprintf("Synced %s %s", status, reason)
	})
	f.waitFor(configMaps, f.ns, "w1-data", released(f, "w1"))
}

// TestPlanShowsRelease: plan (a dry-run controller) shows a kept child that is no longer
// produced as a release, not a prune, and changes nothing.
func TestPlanShowsRelease(t *testing.T) {
	f := startController(t, keepRules)
	f.create(widgets, widget(f.ns, "w1", map[string]any{"cache": true}))
	before := f.waitFor(configMaps, f.ns, "w1-cache", func(o *unstructured.Unstructured) (bool, string) {
		return len(o.GetOwnerReferences()) == 1, "no owner reference yet"
	})
	f.waitIdle()
	f.stop()
	f.patchSpec(widgets, f.ns, "w1", `{"cache":false}`)

	ctrl, err := engine.New(testenv.Config(t), engine.Options{Workers: 1, DryRun: true, Identity: testenv.Identity(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	ctrl.SetRules(t.Context(), f.loadRules(keepRules))
	plans, err := ctrl.Plan(t.Context(), engine.PlanOptions{Rule: f.rule, Namespace: f.ns})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range plans {
		for _, ch := range p.Changes {
			if ch.Action != plan.ActionStatus {
				got = append(got, ch.Text())
			}
		}
	}
	want := []string{"- ConfigMap " + f.ns + "/w1-cache (child cache) released: kept without kubecel's labels and owner reference (lifecycle Keep)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("planned changes (-want +got):\n%s", diff)
	}
	after, err := f.get(configMaps, f.ns, "w1-cache")
	if err != nil || after.GetResourceVersion() != before.GetResourceVersion() {
		t.Errorf("after plan: %v, resourceVersion %s -> %s; want unchanged", err, before.GetResourceVersion(), after.GetResourceVersion())
	}
}
