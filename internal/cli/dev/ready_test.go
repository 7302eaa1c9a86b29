package dev

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/internal/testenv"
)

// gadgetRules are two rules on gadgets: one with a status block in namespace ns, for
// the gadgets labelled tier=web, and one without.
func gadgetRules(ns string) []byte {
	return fmt.Appendf(nil, `apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: web
    parent:
      apiVersion: plan.kubecel.dev/v1
      resource: gadgets
      namespaces: [%s]
      selector: {matchLabels: {tier: web}}
    children:
      - id: config
        template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}"}}
    status:
      fields:
        name: "${parent.metadata.name}"
  - name: quiet
    parent: {apiVersion: plan.kubecel.dev/v1, resource: gadgets}
    children:
      - id: config
        template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-quiet"}}
`, ns)
}

func gadget(ns, name, tier string) sample {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "plan.kubecel.dev/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"tier": tier}}, "spec": map[string]any{}}}
	return sample{gvr: gadgets, obj: u}
}

// TestReadyParents: a sample counts when a rule with a status block serves it (its
// resource, namespaces and selector), with the conditions that rule writes; rules
// that do not load serve none.
func TestReadyParents(t *testing.T) {
	configMap := sample{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		obj: &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "c", "namespace": "a"}}}}
	samples := []sample{gadget("a", "served", "web"), gadget("b", "elsewhere", "web"), gadget("a", "unselected", "db"), configMap}
	got := map[string][]string{}
	for _, p := range readyParents(gadgetRules("a"), samples) {
		got[p.obj.GetNamespace()+"/"+p.obj.GetName()] = p.conditions
	}
	// The one rule with a status block on gadgets writes Ready.
	if diff := cmp.Diff(map[string][]string{"a/served": {"Ready"}}, got); diff != "" {
		t.Errorf("ready parents (-want +got):\n%s", diff)
	}
	if got := readyParents([]byte("rules: [{name: broken"), samples); got != nil {
		t.Errorf("rules that do not load serve %v, want none", got)
	}
}

// TestReportReady: dev names the sample parents that are not Ready once its wait is
// over, and says when all are.
func TestReportReady(t *testing.T) {
	ctx := t.Context()
	ns := testenv.Namespace(t)
	dyn := testenv.Dynamic(t)
	var samples []sample
	for _, name := range []string{"g1", "g2"} {
		s := gadget(ns, name, "web")
		created, err := dyn.Resource(gadgets).Namespace(ns).Create(ctx, s.obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, sample{gvr: gadgets, obj: created})
	}
	setReady := func(name string) {
		t.Helper()
		u, err := dyn.Resource(gadgets).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		u.Object["status"] = map[string]any{"conditions": []any{map[string]any{
			"type": "Ready", "status": "True", "reason": "AllChildrenReady", "message": "every child is ready",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		}}}
		if _, err := dyn.Resource(gadgets).Namespace(ns).UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	parents := readyParents(gadgetRules(ns), samples)
	report := func() string {
		var out testenv.Buffer
		o := &Options{reports: &reports{w: &out, live: true}, readyWait: time.Second}
		o.reportReady(ctx, testenv.Config(t), parents, "DIR/rules.yaml", "DIR/kubeconfig", time.Now())
		return out.String()
	}

	setReady("g1")
	notReady := regexp.MustCompile(`^\[\d\d:\d\d:\d\d\] 1 of 2 sample parents are not Ready 1s after the start: gadgets ` + ns +
		"/g2; `kubecel trace RESOURCE/NAME --rules DIR/rules.yaml --kubeconfig DIR/kubeconfig` says why.\n$")
	if got := report(); !notReady.MatchString(got) {
		t.Errorf("with g2 not Ready, dev says %q, want it named", got)
	}
	setReady("g2")
	allReady := regexp.MustCompile(`^\[\d\d:\d\d:\d\d\] All 2 sample parents are Ready, \d+(\.\d)?s after the start\.\n$`)
	if got := report(); !allReady.MatchString(got) {
		t.Errorf("with both Ready, dev says %q", got)
	}
}
