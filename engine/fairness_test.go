package engine_test

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// tenantsRules serve a heavy tenant (namespace 0-NS), whose Widgets set spec.n and get
// that many ConfigMaps, and a light one (NS), whose Widgets get one ConfigMap.
var tenantsRules = twoTenantsRuleHead + `      - id: many
        when: has(parent.spec.n)
        forEach: lists.range(1000).filter(i, i < int(parent.spec.n))
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-${string(each)}"}
          data: {index: "${string(each)}", value: "${parent.spec.?value.orValue('')}"}
      - id: one
        when: "!has(parent.spec.n)"
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
          data: {value: "${parent.spec.value}"}
    status:
      fields:
        tenant: "${has(parent.spec.n) ? 'heavy' : 'light'}"
`

// TestFairness: while one tenant's parents build and then delete 1,500 children (one
// parent with 1,000 of them), another tenant's parent converges after at most a couple of
// the heavy tenant's batches, not after its backlog: the reconcile of the 1,000-child
// parent yields after each batch of writes, and the queue hands a free worker to the
// namespace with the fewest reconciles running. Yielding costs no write: the heavy
// tenant's children are each created once. One worker makes the order exact.
func TestFairness(t *testing.T) {
	const batch = 50
	reg := prometheus.NewRegistry()
	f := startControllerWith(t, tenantsRules, rules.Options{}, engine.Options{Workers: 1, MaxWritesPerReconcile: batch, Registry: reg})
	heavy := "0-" + f.ns
	namespace(t, heavy)
	sizes := map[string]int{"h0": 1000, "h1": 100, "h2": 100, "h3": 100, "h4": 100, "h5": 100}
	total := 0
	for name, n := range sizes {
		f.create(widgets, widget(heavy, name, map[string]any{"n": n}))
		total += n
	}
	applies := func() float64 { return testenv.Counter(t, reg, "kubecel_apply_total", "rule", f.rule) }
	f.eventually(func() (bool, string) {
		return applies() >= batch, "the heavy tenant has not started"
	})

	// Build: the light parent converges while the heavy tenant's 1,500 creates go on.
	f.create(widgets, widget(f.ns, "light", map[string]any{"value": "1"}))
	f.waitFor(widgets, f.ns, "light", readyFor("1", f))
	if during := heavyWritesMeanwhile(t, f, heavy, "create"); during >= 4*batch {
		t.Errorf("kubecel wrote %d heavy children between the light parent's creation and its status; want fewer than %d (a couple of batches): the light tenant waited for the heavy one's backlog", during, 4*batch)
	}

	f.eventually(func() (bool, string) {
		n := countChildren(t, heavy, f.rule)
		return n == total, fmt.Sprintf("%d of %d heavy children", n, total)
	})
	for name := range sizes {
		f.waitFor(widgets, heavy, name, func(o *unstructured.Unstructured) (bool, string) {
			st, _, msg := testenv.Condition(o, "Ready")
			return st == "True", "Ready " + st + ": " + msg
		})
	}
	if y := testenv.Counter(t, reg, "kubecel_reconcile_yields_total", "rule", f.rule); y < 1000/batch-1 {
		t.Errorf("kubecel_reconcile_yields_total = %.0f; want at least %d (the 1,000-child parent alone yields after each batch)", y, 1000/batch-1)
	}
	f.waitIdle()
	childWrites := func(verb string) int {
		return testenv.Writes(t, func(e controlplane.AuditEvent) bool {
			return e.ObjectRef.Resource == "configmaps" && e.ObjectRef.Namespace == heavy && e.UserAgent == f.userAgent() && e.Verb == verb
		})
	}
	// A child is created by a server-side apply (a patch) that may only create.
	if got := childWrites("patch") + childWrites("create") + childWrites("update"); got != total {
		t.Errorf("writes of heavy children = %d, want %d: one create each (a yielded reconcile continues where it stopped, it does not write again)", got, total)
	}

	// Teardown: the light parent's edit converges while the heavy tenant's children are
	// being deleted.
	for name := range sizes {
		if err := testenv.Dynamic(t).Resource(widgets).Namespace(heavy).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deletes := func() float64 {
		return testenv.Counter(t, reg, "kubecel_parent_deletion_deletes_total", "rule", f.rule)
	}
	f.eventually(func() (bool, string) {
		return deletes() >= batch, "the heavy tenant's teardown has not started"
	})
	f.patchSpec(widgets, f.ns, "light", `{"value":"2"}`)
	f.waitFor(widgets, f.ns, "light", readyFor("2", f))
	if during := heavyWritesMeanwhile(t, f, heavy, "patch"); during >= 4*batch {
		t.Errorf("kubecel deleted %d heavy children between the light parent's edit and its status; want fewer than %d", during, 4*batch)
	}
	f.eventually(func() (bool, string) {
		n := countChildren(t, heavy, f.rule)
		return n == 0, fmt.Sprintf("%d heavy children left", n)
	})
}

// heavyWritesMeanwhile counts, in the audit log, kubecel's writes of heavy children
// between the test's last write (verb) of the light parent and kubecel's next status
// write of it: how much of the heavy tenant's work the light parent waited for.
func heavyWritesMeanwhile(t *testing.T, f *fixture, heavy, verb string) int {
	t.Helper()
	events, err := testenv.ControlPlane(t).AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	light := func(e controlplane.AuditEvent) bool {
		return e.ObjectRef.Resource == "widgets" && e.ObjectRef.Namespace == f.ns && e.ObjectRef.Name == "light"
	}
	start := -1
	for i, e := range events {
		if light(e) && e.Verb == verb && e.ObjectRef.Subresource == "" && e.UserAgent != f.userAgent() {
			start = i
		}
	}
	if start < 0 {
		t.Fatalf("the test's %s of the light parent is not in the audit log", verb)
	}
	n := 0
	for _, e := range events[start+1:] {
		if light(e) && e.ObjectRef.Subresource == "status" && e.UserAgent == f.userAgent() {
			t.Logf("kubecel's writes of heavy children while the light parent waited (after its %s): %d", verb, n)
			return n
		}
		if e.ObjectRef.Resource == "configmaps" && e.ObjectRef.Namespace == heavy && e.UserAgent == f.userAgent() {
			n++
		}
	}
	t.Fatalf("no status write of the light parent after its %s in the audit log (start %d)", verb, start)
	return 0
}

// TestYieldedParentEdited: a parent edited while its children are written over several
// turns ends with every child as the edit says, and a turn after the edit does not go
// on with work computed before it: every child first written after the edit (but for
// the batch in flight then) is written once.
func TestYieldedParentEdited(t *testing.T) {
	const batch, n = 20, 200
	f := startControllerWith(t, tenantsRules, rules.Options{}, engine.Options{Workers: 1, MaxWritesPerReconcile: batch})
	f.create(widgets, widget(f.ns, "big", map[string]any{"n": n, "value": "a"}))
	f.eventually(func() (bool, string) {
		c := countChildren(t, f.ns, f.rule)
		return c >= 2*batch, fmt.Sprintf("%d children", c)
	})
	f.patchSpec(widgets, f.ns, "big", `{"value":"b"}`)
	f.eventually(func() (bool, string) {
		list, err := testenv.Dynamic(t).Resource(configMaps).Namespace(f.ns).List(t.Context(), metav1.ListOptions{LabelSelector: contract.LabelRule + "=" + f.rule})
		if err != nil {
			return false, err.Error()
		}
		done := 0
		for _, cm := range list.Items {
			if nestedString(&cm, "data", "value") == "b" {
				done++
			}
		}
		return done == n && len(list.Items) == n, fmt.Sprintf("%d of %d children, %d with the edit", len(list.Items), n, done)
	})
	f.waitFor(widgets, f.ns, "big", func(o *unstructured.Unstructured) (bool, string) {
		st, _, msg := testenv.Condition(o, "Ready")
		gen, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
		return st == "True" && gen == o.GetGeneration(), "Ready " + st + ": " + msg
	})
	f.waitIdle()
	events, err := testenv.ControlPlane(t).AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	edit := -1
	for i, e := range events {
		if e.ObjectRef.Resource == "widgets" && e.ObjectRef.Namespace == f.ns && e.Verb == "patch" && e.UserAgent != f.userAgent() {
			edit = i
		}
	}
	if edit < 0 {
		t.Fatal("the edit is not in the audit log")
	}
	first, writes := map[string]int{}, map[string]int{}
	for i, e := range events {
		if e.ObjectRef.Resource == "configmaps" && e.ObjectRef.Namespace == f.ns && e.UserAgent == f.userAgent() && e.Verb == "patch" {
			if _, ok := first[e.ObjectRef.Name]; !ok {
				first[e.ObjectRef.Name] = i
			}
			writes[e.ObjectRef.Name]++
		}
	}
	stale := 0
	for name, at := range first {
		if at > edit && writes[name] > 1 {
			stale++
		}
	}
	t.Logf("children first written after the edit, then again: %d", stale)
	if stale > batch {
		t.Errorf("%d children were first written after the edit and then written again; want at most %d (the batch in flight): a turn went on with work from before the edit", stale, batch)
	}
}

// readyFor waits for the light parent's child to hold value, with the parent Ready for
// its generation.
func readyFor(value string, f *fixture) func(*unstructured.Unstructured) (bool, string) {
	return func(o *unstructured.Unstructured) (bool, string) {
		cm, err := f.get(configMaps, f.ns, "light")
		if err != nil {
			return false, err.Error()
		}
		if got := nestedString(cm, "data", "value"); got != value {
			return false, "child value " + got
		}
		st, _, msg := testenv.Condition(o, "Ready")
		gen, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
		return st == "True" && gen == o.GetGeneration(), fmt.Sprintf("Ready %s (%s), observedGeneration %d of %d", st, msg, gen, o.GetGeneration())
	}
}

// countChildren counts the ConfigMaps of rule in ns.
func countChildren(t *testing.T, ns, rule string) int {
	t.Helper()
	list, err := testenv.Dynamic(t).Resource(configMaps).Namespace(ns).List(t.Context(), metav1.ListOptions{LabelSelector: contract.LabelRule + "=" + rule})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}
