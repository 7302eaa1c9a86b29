package faults

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubecel/kubecel/rules/contract"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// finalizerRules: one rule per name in Names, each giving every widget a ConfigMap in
// the other namespace (behind the rule's finalizer). The rule "two" skips every widget
// whose spec.n is a multiple of 3.
const finalizerRules = rulesHead + `{{range .Names}}  - name: {{$.Rule}}-{{.}}
    parent:
      apiVersion: faults.kubecel.dev/v1
      resource: widgets
      namespaces: [{{$.NS}}]
{{- if eq . "two"}}
      when: parent.spec.n % 3 != 0
{{- end}}
    children:
      - id: remote
        crossNamespace: true
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-{{.}}", namespace: "{{$.Other}}"}
{{end}}`

// finalizerWorld is a world with the rules of finalizerRules it runs.
type finalizerWorld struct {
	*world
	Names []string
}

// leakGrace bounds the wait for the children of parents that are gone. Nothing deletes
// them any more (garbage collection cannot follow them to another namespace), so one
// still there after it stays for good.
const leakGrace = 10 * time.Second

// TestOwnershipFinalizerPerRule: three rules put children of the same widgets in another
// namespace, one of them not for every widget. The rules file loses one rule, then every
// widget is deleted: each remaining rule deletes its children before the widget goes,
// and no widget hangs on the removed rule's finalizer.
func TestOwnershipFinalizerPerRule(t *testing.T) {
	// The world's rules file is empty until the rule names are known.
	fw := &finalizerWorld{world: newWorldRules(t, "finalizers", rulesHead), Names: []string{"one", "two", "three"}}
	fw.Rules = writeRules(t, finalizerRules, fw)
	ctrl := startLoaded(t, fw.Rules)
	const parents = 30
	for n := range parents {
		fw.apply(fmt.Sprintf("w%02d", n), nil, map[string]any{"n": int64(n)})
	}
	want := map[string]int{"one": parents, "two": parents - (parents+2)/3, "three": parents}
	eventually(t, settle, func() (bool, string) {
		got := fw.remoteChildren(t)
		for _, name := range fw.Names {
			if got[name] != want[name] {
				return false, fmt.Sprintf("rule %s has %d children, want %d", name, got[name], want[name])
			}
		}
		return true, ""
	})

	fw.Names = []string{"one", "two"}
	ctrl.rewriteRules(t, fw.Rules, finalizerRules, fw)
	for _, name := range fw.names() {
		fw.delete(name)
	}
	eventually(t, settle, func() (bool, string) {
		list, err := dyn(t).Resource(widgets).Namespace(fw.NS).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		if n := len(list.Items); n > 0 {
			p := list.Items[0]
			return false, fmt.Sprintf("%d widgets still deleting, e.g. %s with finalizers %v", n, p.GetName(), p.GetFinalizers())
		}
		return true, ""
	})
	var left map[string]int
	if ok, _ := within(leakGrace, func() (bool, string) {
		left = fw.remoteChildren(t)
		return left["one"]+left["two"] == 0, ""
	}); !ok {
		t.Errorf("after every widget was deleted, %d of %d children of rule one and %d of %d of rule two are left in %s",
			left["one"], want["one"], left["two"], want["two"], fw.Other)
	}
}

// TestOwnershipRuleBack: a rule removed from the rules file lets go of its widget (its
// finalizer goes, its child in the other namespace stays). Once the rule is back, the
// child is its own again: the widget gets the rule's finalizer back, and deleting the
// widget deletes the child.
func TestOwnershipRuleBack(t *testing.T) {
	fw := &finalizerWorld{world: newWorldRules(t, "ruleback", rulesHead), Names: []string{"one", "three"}}
	fw.Rules = writeRules(t, finalizerRules, fw)
	ctrl := startLoaded(t, fw.Rules)
	fw.apply("w", nil, map[string]any{"n": int64(1)})
	finalizer := "cleanup.kubecel.dev/" + fw.Rule + "-one"
	holds := func(want bool) func() (bool, string) {
		return func() (bool, string) {
			p, err := fw.widget("w")
			if err != nil {
				return false, err.Error()
			}
			got := slices.Contains(p.GetFinalizers(), finalizer)
			return got == want && fw.remoteChildren(t)["one"] == 1, fmt.Sprintf("finalizers %v, children %v", p.GetFinalizers(), fw.remoteChildren(t))
		}
	}
	eventually(t, settle, holds(true))

	fw.Names = []string{"three"}
	ctrl.rewriteRules(t, fw.Rules, finalizerRules, fw)
	eventually(t, settle, holds(false))

	fw.Names = []string{"one", "three"}
	ctrl.rewriteRules(t, fw.Rules, finalizerRules, fw)
	if ok, msg := within(settle, holds(true)); !ok {
		t.Errorf("rule one is back with its child in %s but not its finalizer on the widget within %s: %s", fw.Other, settle, msg)
	}

	fw.delete("w")
	eventually(t, settle, fw.vanished("w"))
	var left map[string]int
	if ok, _ := within(leakGrace, func() (bool, string) {
		left = fw.remoteChildren(t)
		return left["one"]+left["three"] == 0, ""
	}); !ok {
		t.Errorf("after the widget was deleted, its children are left in %s: %v", fw.Other, left)
	}
}

// remoteChildren counts the ConfigMaps in the other namespace by the rule (its suffix
// after the world's rule name) whose labels they carry.
func (fw *finalizerWorld) remoteChildren(t testing.TB) map[string]int {
	t.Helper()
	cms, err := dyn(t).Resource(configMaps).Namespace(fw.Other).List(t.Context(), metav1.ListOptions{LabelSelector: contract.LabelManagedBy + "=" + contract.ManagedByValue})
	if err != nil {
		t.Fatalf("list configmaps: %v", err)
	}
	count := map[string]int{}
	for _, cm := range cms.Items {
		count[strings.TrimPrefix(cm.GetLabels()[contract.LabelRule], fw.Rule+"-")]++
	}
	return count
}

// selectedRules: widgets labelled tier: managed get one ConfigMap per element of
// spec.copies in the other namespace.
const selectedRules = rulesHead + `  - name: {{.Rule}}
    parent:
      apiVersion: faults.kubecel.dev/v1
      resource: widgets
      namespaces: [{{.NS}}]
      selector: {matchLabels: {tier: managed}}
    children:
      - id: copies
        forEach: parent.spec.copies
        crossNamespace: true
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-${each}", namespace: "{{.Other}}"}
`

// TestOwnershipReleasedWhenUnselected: a widget relabelled out of its rule's selector
// loses its children and the rule's finalizer, and is then deleted at once.
func TestOwnershipReleasedWhenUnselected(t *testing.T) {
	w := newWorldRules(t, "unselected", selectedRules)
	startLoaded(t, w.Rules)
	copies := []any{"a", "b", "c"}
	w.apply("w", map[string]string{"tier": "managed"}, map[string]any{"copies": copies})
	eventually(t, settle, func() (bool, string) {
		p, err := w.widget("w")
		if err != nil {
			return false, err.Error()
		}
		if n := w.childCount(); n != len(copies) || len(p.GetFinalizers()) == 0 {
			return false, fmt.Sprintf("%d children of %d, finalizers %v", n, len(copies), p.GetFinalizers())
		}
		return true, ""
	})

	w.apply("w", map[string]string{"tier": "retired"}, map[string]any{"copies": copies})
	if ok, msg := within(settle, func() (bool, string) {
		p, err := w.widget("w")
		if err != nil {
			return false, err.Error()
		}
		n := w.childCount()
		return n == 0 && len(p.GetFinalizers()) == 0, fmt.Sprintf("%d children left, finalizers %v", n, p.GetFinalizers())
	}); !ok {
		t.Errorf("the widget the rule no longer selects was not released within %s: %s", settle, msg)
	}

	w.delete("w")
	eventually(t, settle, w.vanished("w"))
}

// childCount is the number of ConfigMaps of the world's rule in the other namespace.
func (w *world) childCount() int {
	w.t.Helper()
	cms, err := dyn(w.t).Resource(configMaps).Namespace(w.Other).List(w.t.Context(), metav1.ListOptions{LabelSelector: contract.LabelRule + "=" + w.Rule})
	if err != nil {
		w.t.Fatalf("list configmaps: %v", err)
	}
	return len(cms.Items)
}

// within polls cond until it holds or timeout passes, and returns cond's last result:
// eventually for a caller that goes on when it fails.
func within(timeout time.Duration, cond func() (bool, string)) (bool, string) {
	start := time.Now()
	for {
		ok, msg := cond()
		if ok || time.Since(start) > timeout {
			return ok, msg
		}
		time.Sleep(200 * time.Millisecond)
	}
}
