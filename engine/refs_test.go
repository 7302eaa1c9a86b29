package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// refRules: each Widget reads the ConfigMap its spec names (required), an optional
// ConfigMap "defaults", and lists the ConfigMaps labelled with its name; its child copies
// what it read.
const refRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: {{.Rule}}
    parent:
      apiVersion: engine.kubecel.dev/v1
      resource: widgets
      namespaces: [{{.NS}}]
    refs:
      - {id: settings, apiVersion: v1, kind: ConfigMap, name: "${parent.spec.settings}"}
      - {id: defaults, apiVersion: v1, kind: ConfigMap, name: defaults, optional: true}
      - id: members
        apiVersion: v1
        kind: ConfigMap
        selector: {matchLabels: {member-of: "${parent.metadata.name}"}}
    children:
      - id: out
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-out"}
          data:
            value: "${refs.settings.data.value}"
      - id: extra
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-extra"}
          data:
            default: "${refs.?defaults.data.value.orValue('none')}"
            members: "${refs.members.map(m, m.metadata.name).join(',')}"
    status:
      fields:
        value: "${refs.settings.data.value}"
`

// refConfigMap is a ConfigMap that parents read.
func refConfigMap(ns, name string, lbls map[string]any, data map[string]any) map[string]any {
	md := map[string]any{"name": name, "namespace": ns}
	if lbls != nil {
		md["labels"] = lbls
	}
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data}
}

// patchData merges data into a ConfigMap's data.
func (f *fixture) patchData(name, dataJSON string) {
	f.t.Helper()
	patch := []byte(`{"data":` + dataJSON + `}`)
	if _, err := testenv.Dynamic(f.t).Resource(configMaps).Namespace(f.ns).Patch(f.t.Context(), name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		f.t.Fatalf("patch configmap %s: %v", name, err)
	}
}

func (f *fixture) deleteConfigMap(name string) {
	f.t.Helper()
	if err := testenv.Dynamic(f.t).Resource(configMaps).Namespace(f.ns).Delete(f.t.Context(), name, metav1.DeleteOptions{}); err != nil {
		f.t.Fatalf("delete configmap %s: %v", name, err)
	}
}

// waitData waits until the ConfigMap's data key holds want.
func (f *fixture) waitData(name, key, want string) {
	f.t.Helper()
	f.waitFor(configMaps, f.ns, name, func(o *unstructured.Unstructured) (bool, string) {
		got := nestedString(o, "data", key)
		return got == want, fmt.Sprintf("%s data.%s = %q, want %q", name, key, got, want)
	})
}

// waitReady waits until the parent's Ready condition has status and reason, and a
// message containing msg.
func (f *fixture) waitReady(name, status, reason, msg string) {
	f.t.Helper()
	f.waitFor(widgets, f.ns, name, func(o *unstructured.Unstructured) (bool, string) {
		s, r, m := testenv.Condition(o, contract.ConditionReady)
		return s == status && r == reason && strings.Contains(m, msg), fmt.Sprintf("Ready=%s %s %q", s, r, m)
	})
}

func TestRefAppearsLate(t *testing.T) {
	f := startController(t, refRules)
	f.create(widgets, widget(f.ns, "w", map[string]any{"settings": "w-settings"}))
	f.waitReady("w", "False", contract.ReasonRefMissing, fmt.Sprintf("refs.settings: ConfigMap %s/w-settings does not exist; out waits for refs.settings", f.ns))
	// The child that does not read the missing ref is made meanwhile.
	f.waitData("w-extra", "default", "none")
	if got := f.childNames("configmaps", "out"); len(got) != 0 {
		t.Fatalf("out exists while its ref is missing: %v", got)
	}

	f.create(configMaps, refConfigMap(f.ns, "w-settings", nil, map[string]any{"value": "1"}))
	f.waitData("w-out", "value", "1")
	f.patchData("w-settings", `{"value":"2"}`)
	f.waitData("w-out", "value", "2")
	f.waitFor(widgets, f.ns, "w", func(o *unstructured.Unstructured) (bool, string) {
		got := nestedString(o, "status", "value")
		return got == "2", fmt.Sprintf("status.value = %q", got)
	})
}

func TestRefEditReconcilesOnlyItsReaders(t *testing.T) {
	const others = 20
	f := startController(t, refRules)
	f.create(configMaps, refConfigMap(f.ns, "mine", nil, map[string]any{"value": "a"}))
	f.create(configMaps, refConfigMap(f.ns, "theirs", nil, map[string]any{"value": "t"}))
	f.create(widgets, widget(f.ns, "reader", map[string]any{"settings": "mine"}))
	for i := range others {
		f.create(widgets, widget(f.ns, fmt.Sprintf("other%d", i), map[string]any{"settings": "theirs"}))
	}
	f.waitData("reader-out", "value", "a")
	for i := range others {
		f.waitData(fmt.Sprintf("other%d-out", i), "value", "t")
	}
	f.waitIdle()

	before := f.ctrl.Reconciles()
	f.patchData("mine", `{"value":"b"}`)
	f.waitData("reader-out", "value", "b")
	f.waitIdle()
	// The edit reconciles its reader (and again for the reader's own child and status
	// events); none of the other parents, which a rule-wide requeue would have added.
	if n := f.ctrl.Reconciles() - before; n < 1 || n >= others {
		t.Errorf("editing a ref read by 1 of %d parents led to %d reconciles, want at least 1 and far fewer than %d", others+1, n, others)
	}
}

func TestRefDeleted(t *testing.T) {
	f := startController(t, refRules)
	f.create(configMaps, refConfigMap(f.ns, "s", nil, map[string]any{"value": "1"}))
	f.create(configMaps, refConfigMap(f.ns, "defaults", nil, map[string]any{"value": "d"}))
	f.create(widgets, widget(f.ns, "w", map[string]any{"settings": "s"}))
	f.waitData("w-out", "value", "1")
	f.waitData("w-extra", "default", "d")

	// Optional: CEL sees it absent.
	f.deleteConfigMap("defaults")
	f.waitData("w-extra", "default", "none")

	// Required: the parent waits and its children stay.
	f.deleteConfigMap("s")
	f.waitReady("w", "False", contract.ReasonRefMissing, "refs.settings")
	f.waitIdle()
	f.waitData("w-out", "value", "1")
}

func TestSelectorRefMembers(t *testing.T) {
	f := startController(t, refRules)
	f.create(configMaps, refConfigMap(f.ns, "s", nil, map[string]any{"value": "1"}))
	f.create(widgets, widget(f.ns, "w", map[string]any{"settings": "s"}))
	f.waitData("w-extra", "members", "")
	f.create(configMaps, refConfigMap(f.ns, "m2", map[string]any{"member-of": "w"}, nil))
	f.create(configMaps, refConfigMap(f.ns, "m1", map[string]any{"member-of": "w"}, nil))
	f.waitData("w-extra", "members", "m1,m2")
	patch := []byte(`{"metadata":{"labels":{"member-of":"someone-else"}}}`)
	if _, err := testenv.Dynamic(t).Resource(configMaps).Namespace(f.ns).Patch(t.Context(), "m1", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitData("w-extra", "members", "m2")
}

const crossNamespaceRefRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: {{.Rule}}
    parent:
      apiVersion: engine.kubecel.dev/v1
      resource: widgets
      namespaces: [{{.NS}}]
    refs:
      - id: settings
        apiVersion: v1
        kind: ConfigMap
        name: shared
        namespace: "${parent.spec.from}"
        {{.Cross}}
    children:
      - id: out
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-out"}
          data: {value: "${refs.settings.data.value}"}
    status:
      fields:
        value: "${refs.settings.data.value}"
`

func TestCrossNamespaceRef(t *testing.T) {
	other := testenv.Namespace(t)
	if _, err := testenv.Dynamic(t).Resource(configMaps).Namespace(other).Create(t.Context(),
		&unstructured.Unstructured{Object: refConfigMap(other, "shared", nil, map[string]any{"value": "secret-ish"})}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, allowed := range []bool{false, true} {
		t.Run(fmt.Sprintf("crossNamespace=%v", allowed), func(t *testing.T) {
			cross := ""
			if allowed {
				cross = "crossNamespace: true"
			}
			f := startController(t, strings.ReplaceAll(crossNamespaceRefRules, "{{.Cross}}", cross))
			f.create(widgets, widget(f.ns, "w", map[string]any{"from": other}))
			if allowed {
				f.waitData("w-out", "value", "secret-ish")
				return
			}
			want := fmt.Sprintf(`ref "settings": namespace: namespace %q is not the parent's (%q): reading another namespace needs crossNamespace: true on the ref`, other, f.ns)
			f.waitFor(widgets, f.ns, "w", func(o *unstructured.Unstructured) (bool, string) {
				s, r, m := testenv.Condition(o, contract.ConditionSynced)
				return s == "False" && strings.Contains(m, want), fmt.Sprintf("Synced=%s %s %q", s, r, m)
			})
			f.waitIdle()
			if got := f.childNames("configmaps", "out"); len(got) != 0 {
				t.Errorf("a child was made from another namespace's ConfigMap: %v", got)
			}
		})
	}
}

func TestSteadyStateWithRefsSendsNoWrites(t *testing.T) {
	const parents = 20
	f := startController(t, refRules)
	f.create(configMaps, refConfigMap(f.ns, "s", nil, map[string]any{"value": "1", "unused": "x"}))
	f.create(configMaps, refConfigMap(f.ns, "m", map[string]any{"member-of": "w0"}, nil))
	for i := range parents {
		f.create(widgets, widget(f.ns, fmt.Sprintf("w%d", i), map[string]any{"settings": "s"}))
	}
	for i := range parents {
		f.waitReady(fmt.Sprintf("w%d", i), "True", contract.ReasonReady, "")
	}
	f.waitData("w0-extra", "members", "m")
	f.waitIdle()
	// Only the controller's writes: the test's own edit of the ref is one too.
	byController := func(e controlplane.AuditEvent) bool {
		return f.controllerWrites(e) && strings.HasPrefix(e.UserAgent, f.userAgent())
	}
	converged := testenv.Writes(t, byController)
	if converged == 0 {
		t.Fatal("no write of the controller counted: the audit filter is wrong")
	}

	f.ctrl.EnqueueAll()
	f.waitIdle()
	// An edit of a ref that changes nothing the children or status read.
	f.patchData("s", `{"unused":"y"}`)
	f.waitIdle()
	if after := testenv.Writes(t, byController); after != converged {
		t.Errorf("at rest, and after a ref edit that changes no child, the controller sent %d write requests, want 0", after-converged)
		logRepeatedWrites(t, f.ns)
	}
}

// notifications records what the controller says about rules that cannot run.
type notifications struct {
	mu   sync.Mutex
	seen []string
}

func (n *notifications) notify(_ context.Context, rule, reason, message string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seen = append(n.seen, rule+" "+reason+": "+message)
}

func (n *notifications) list() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.seen)
}

func TestRefKindNotServed(t *testing.T) {
	var n notifications
	f := startControllerWith(t, `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: {{.Rule}}
    parent:
      apiVersion: engine.kubecel.dev/v1
      resource: widgets
      namespaces: [{{.NS}}]
    refs:
      - {id: gizmo, apiVersion: engine.kubecel.dev/v1, kind: Gizmo, name: x}
    children:
      - id: out
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-out"}
          data: {v: "${string(has(refs.gizmo))}"}
`, rules.Options{}, engine.Options{Workers: 2, Notify: n.notify})
	want := fmt.Sprintf(`%s %s: ref "gizmo" kind engine.kubecel.dev/v1, Kind=Gizmo: `, f.rule, contract.PendingNotServed)
	f.eventually(func() (bool, string) {
		for _, s := range n.list() {
			if strings.HasPrefix(s, want) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("notifications %q, want one starting %q", n.list(), want)
	})
	f.create(widgets, widget(f.ns, "w", nil))
	f.waitIdle()
	if got := f.childNames("configmaps", "out"); len(got) != 0 {
		t.Errorf("a rule whose ref kind is not served made children: %v", got)
	}
}

// TestRefReadsAnObjectKubecelMade: objects kubecel made are cached by the children's
// informer, not by the ref informers; a ref reads them there, and follows them.
func TestRefReadsAnObjectKubecelMade(t *testing.T) {
	f := startController(t, refRules)
	f.create(configMaps, refConfigMap(f.ns, "s", nil, map[string]any{"value": "1"}))
	f.create(widgets, widget(f.ns, "a", map[string]any{"settings": "s"}))
	f.waitData("a-out", "value", "1")
	// b reads a's child a-out, which carries value under data.value too.
	f.create(widgets, widget(f.ns, "b", map[string]any{"settings": "a-out"}))
	f.waitData("b-out", "value", "1")
	f.patchData("s", `{"value":"2"}`)
	f.waitData("a-out", "value", "2")
	f.waitData("b-out", "value", "2")
}
