package engine_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/rulesource"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// installationRules make one child, "a", and a status.
const installationRules = widgetRuleHead + `      - id: a
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-a"}
    status:
      fields:
        made: a
`

// secondInstallationRules are another installation's version of the same rule: the same
// child a, and a child b of its own.
const secondInstallationRules = widgetRuleHead + `      - id: a
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-a"}
      - id: b
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-b"}
    status:
      fields:
        made: a and b
`

// TestTwoInstallations: a second installation (its own key) runs a rule of the same name
// on the same parents. Neither writes nor deletes the other's children: the second
// creates its child b, reports the name of child a as held by another installation, and
// leaves the parents' status to the first; stopping it takes nothing away.
func TestTwoInstallations(t *testing.T) {
	f := startController(t, installationRules)
	parents := []string{"w1", "w2", "w3"}
	for _, name := range parents {
		f.create(widgets, widget(f.ns, name, nil))
	}
	first := map[string]*unstructured.Unstructured{}
	for _, name := range parents {
		first[name] = f.waitFor(configMaps, f.ns, name+"-a", nil)
		f.waitReady(name, "True", contract.ReasonReady, "")
	}
	key, err := rules.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	other, err := rules.NewIdentity(contract.DefaultInstallation, key)
	if err != nil {
		t.Fatal(err)
	}
	second := &fixture{t: t, ns: f.ns, rule: f.rule, rulesTemplate: secondInstallationRules,
		opts: engine.Options{Workers: 2, Identity: other}, agent: "kubecel-engine-test/second-" + f.rule}
	second.run()
	for _, name := range parents {
		f.waitFor(configMaps, f.ns, name+"-b", nil)
		f.eventually(func() (bool, string) {
			events, err := testenv.Kube(t).CoreV1().Events(f.ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
			if err != nil {
				return false, err.Error()
			}
			for _, e := range events.Items {
				if e.Reason == contract.ReasonChildExists && strings.Contains(e.Message, "another kubecel installation") {
					return true, ""
				}
			}
			return false, fmt.Sprintf("no ChildExists Event naming another installation on %s", name)
		})
	}
	f.waitIdle()
	second.waitIdle()
	second.stop()
	f.restart() // with nothing in memory, it looks at every child again
	f.waitIdle()
	for _, name := range parents {
		got, err := f.get(configMaps, f.ns, name+"-a")
		if err != nil || got.GetUID() != first[name].GetUID() || got.GetResourceVersion() != first[name].GetResourceVersion() {
			t.Errorf("%s-a was replaced or written (err %v)", name, err)
		}
		if _, err := f.get(configMaps, f.ns, name+"-b"); err != nil {
			t.Errorf("the second installation's %s-b: %v", name, err)
		}
		w, _ := f.get(widgets, f.ns, name)
		if got := nestedString(w, "status", "made"); got != "a" {
			t.Errorf("%s status.made = %q, want the first installation's", name, got)
		}
	}
	for _, agent := range []string{f.userAgent(), second.userAgent()} {
		for _, w := range writesTo(t, f.ns, agent) {
			if strings.HasPrefix(w, "delete ") {
				t.Errorf("%s: %s", agent, w)
			}
		}
	}
	if w := slices.DeleteFunc(writesTo(t, f.ns, second.userAgent()), func(w string) bool { return strings.HasSuffix(w, "-b") }); len(w) > 0 {
		t.Errorf("the second installation wrote %v; want only its own b children", w)
	}
}

// teamRules is one team's rules ConfigMap: rule name serves the widgets of ns with one
// child, named after the team.
func teamRules(ns, cmName, rule, child string) *corev1.ConfigMap {
	data := fmt.Sprintf(`apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: %s
    parent: {apiVersion: engine.kubecel.dev/v1, resource: widgets, namespaces: [%s]}
    children:
      - id: %s
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-%s"}
`, rule, ns, child, child)
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmName, Labels: map[string]string{"kubecel.dev/rules": "true"}},
		Data: map[string]string{"rules.yaml": data}}
}

// TestRuleNameFromAnotherSource: team B's rules ConfigMap defines a rule of the name of
// team A's; it is refused while A's exists, and when A deletes its ConfigMap, B's rule
// runs without pruning the children A's rule made.
func TestRuleNameFromAnotherSource(t *testing.T) {
	ns := testenv.Namespace(t)
	rulesNS := testenv.Namespace(t)
	kube := testenv.Kube(t)
	rule := "ga-" + strings.TrimPrefix(ns[strings.LastIndexByte(ns, '-'):], "-")
	if _, err := kube.CoreV1().ConfigMaps(rulesNS).Create(t.Context(), teamRules(ns, "team-a", rule, "a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctrl := runWithLoader(t, rulesource.ConfigMapSelector(kube, rulesNS, labels.SelectorFromSet(labels.Set{"kubecel.dev/rules": "true"})), prometheus.NewRegistry(), engine.Options{})
	f := &fixture{t: t, ns: ns, ctrl: ctrl}
	for _, name := range []string{"w1", "w2"} {
		f.create(widgets, widget(ns, name, nil))
		f.waitFor(configMaps, ns, name+"-a", nil)
	}
	if _, err := kube.CoreV1().ConfigMaps(rulesNS).Create(t.Context(), teamRules(ns, "team-b", rule, "b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().ConfigMaps(rulesNS).Delete(t.Context(), "team-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"w1", "w2"} {
		f.waitFor(configMaps, ns, name+"-b", nil)
	}
	f.waitIdle()
	for _, name := range []string{"w1-a", "w2-a"} {
		if _, err := f.get(configMaps, ns, name); err != nil {
			t.Errorf("%s, made by team A's rule: %v (a rule of the same name from another source pruned it)", name, err)
		}
	}
}

// TestLeftoverTakenOver: the children of a parent deleted with --cascade=orphan are taken
// over by a new parent of the same name, which this rule made them for; no ChildExists
// that its tenant cannot clear.
func TestLeftoverTakenOver(t *testing.T) {
	f := startController(t, installationRules)
	old := f.create(widgets, widget(f.ns, "w", nil))
	f.waitFor(configMaps, f.ns, "w-a", nil)
	f.deleteWidget("w", metav1.DeletePropagationOrphan)
	f.waitGone(widgets, f.ns, "w")
	f.waitFor(configMaps, f.ns, "w-a", func(o *unstructured.Unstructured) (bool, string) {
		return len(o.GetOwnerReferences()) == 0, "still owned"
	})
	parent := f.create(widgets, widget(f.ns, "w", nil))
	f.waitReady("w", "True", contract.ReasonReady, "")
	got := f.waitFor(configMaps, f.ns, "w-a", func(o *unstructured.Unstructured) (bool, string) {
		return o.GetLabels()[contract.LabelParentUID] == string(parent.GetUID()), fmt.Sprintf("parent-uid %s", o.GetLabels()[contract.LabelParentUID])
	})
	if refs := got.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != parent.GetUID() {
		t.Errorf("owner references %v, want the new parent %s (the old one was %s)", refs, parent.GetUID(), old.GetUID())
	}
}

// sharedRules give every widget of two namespaces the same child name in a third one.
var sharedRules = twoTenantsRuleHead + `      - id: shared
        crossNamespace: true
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: shared, namespace: "1-{{.NS}}"}
    status:
      fields:
        made: "yes"
`

// TestConflictNamesNoOtherNamespace: a parent whose child's name is held by another
// tenant's parent's child is told so without that parent's name or namespace.
func TestConflictNamesNoOtherNamespace(t *testing.T) {
	f := startController(t, sharedRules)
	namespace(t, "0-"+f.ns)
	namespace(t, "1-"+f.ns)
	f.create(widgets, widget(f.ns, "secret-project", nil))
	f.waitFor(configMaps, "1-"+f.ns, "shared", nil)
	f.create(widgets, widget("0-"+f.ns, "mine", nil))
	w := f.waitFor(widgets, "0-"+f.ns, "mine", func(o *unstructured.Unstructured) (bool, string) {
		s, r, m := testenv.Condition(o, contract.ConditionSynced)
		return s == "False" && r == contract.ReasonChildExists, fmt.Sprintf("Synced=%s %s %q", s, r, m)
	})
	_, _, msg := testenv.Condition(w, contract.ConditionSynced)
	if strings.Contains(msg, "secret-project") || strings.Contains(msg, " "+f.ns) || strings.Contains(msg, "/"+f.ns) {
		t.Errorf("the message names the other tenant's parent: %s", msg)
	}
	if !strings.Contains(msg, "a parent in another namespace") {
		t.Errorf("message %q, want it to say the holder is a parent in another namespace", msg)
	}
}

// TestReleasedChildMessage: a child released by lifecycle Keep is no longer kubecel's;
// a new parent of the same name is told how to take it over or clear it.
func TestReleasedChildMessage(t *testing.T) {
	f := startController(t, widgetRuleHead+`      - id: kept
        lifecycle: {onParentDelete: Keep}
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-kept"}
    status:
      fields:
        made: "yes"
`)
	f.create(widgets, widget(f.ns, "w", nil))
	f.waitFor(configMaps, f.ns, "w-kept", nil)
	f.deleteWidget("w", metav1.DeletePropagationBackground)
	f.waitGone(widgets, f.ns, "w")
	f.waitFor(configMaps, f.ns, "w-kept", func(o *unstructured.Unstructured) (bool, string) {
		return o.GetLabels()[contract.LabelManagedBy] == "", "not released yet"
	})
	f.create(widgets, widget(f.ns, "w", nil))
	f.waitFor(widgets, f.ns, "w", func(o *unstructured.Unstructured) (bool, string) {
		s, r, m := testenv.Condition(o, contract.ConditionSynced)
		return s == "False" && r == contract.ReasonChildExists && strings.Contains(m, "released by kubecel") && strings.Contains(m, "adopt: true"),
			fmt.Sprintf("Synced=%s %s %q", s, r, m)
	})
}

// TestOrphanAmongRecreated is the lifecycle in which orphaned children were lost:
// parents deleted and created again under their names, then another parent deleted with
// --cascade=orphan. Its children stay, five rounds in a row, and kubecel deletes none of
// them. It failed in 2 of 4 runs under -race when a reconcile that did not see the
// deletion yet put back the owner reference the garbage collector had just removed,
// which then had the collector delete the child (see Controller.orphaning).
func TestOrphanAmongRecreated(t *testing.T) {
	f := startController(t, deletionRules)
	for round := range 5 {
		names := []string{fmt.Sprintf("a%d", round), fmt.Sprintf("b%d", round), fmt.Sprintf("o%d", round)}
		for _, name := range names {
			f.create(widgets, widget(f.ns, name, map[string]any{"size": int64(1)}))
		}
		for _, name := range names {
			for _, child := range childNames(name) {
				f.waitFor(configMaps, f.ns, child, nil)
			}
		}
		for _, name := range names[:2] {
			f.deleteWidget(name, metav1.DeletePropagationBackground)
			f.waitGone(widgets, f.ns, name)
			f.create(widgets, widget(f.ns, name, map[string]any{"size": int64(1)}))
		}
		f.deleteWidget(names[2], metav1.DeletePropagationOrphan)
		f.waitGone(widgets, f.ns, names[2])
		for _, name := range names[:2] {
			for _, child := range childNames(name) {
				f.waitFor(configMaps, f.ns, child, nil)
			}
		}
		f.waitIdle()
		for _, child := range childNames(names[2]) {
			if _, err := f.get(configMaps, f.ns, child); err != nil {
				t.Errorf("round %d: orphaned child %s: %v", round, child, err)
			}
		}
	}
	deletes := f.kubecelDeletes()
	for round := range 5 {
		for _, child := range childNames(fmt.Sprintf("o%d", round)) {
			if deletes[child] > 0 {
				t.Errorf("kubecel deleted the orphaned child %s", child)
			}
		}
	}
}
