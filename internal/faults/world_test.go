package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

// worldRules gives every widget a ConfigMap in its namespace (garbage collected through
// the owner reference) and one in another namespace (crossNamespace: removed by kubecel
// behind its finalizer), and mirrors spec.value into the status.
const worldRules = rulesHead + worldParent + worldChildren

// rulesHead starts a RuleSet; the rules follow.
const rulesHead = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
`

// worldParent is the world rule's name and parent (the test namespace's widgets).
const worldParent = `  - name: {{.Rule}}
    parent:
      apiVersion: faults.kubecel.dev/v1
      resource: widgets
      namespaces: [{{.NS}}]
`

// worldChildren is the world rule's children and status.
const worldChildren = `    children:
      - id: local
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
          data: {value: "${string(parent.spec.value)}"}
      - id: remote
        crossNamespace: true
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}", namespace: "{{.Other}}"}
          data: {value: "${string(parent.spec.value)}"}
    status:
      fields: {value: "${string(parent.spec.value)}"}
`

// world is one scenario's parents: widgets in NS under rule Rule, with children in NS
// and Other.
type world struct {
	t     testing.TB
	NS    string
	Other string
	Rule  string
	Rules string // the rules file
}

func newWorld(t testing.TB, prefix string) *world {
	t.Helper()
	return newWorldRules(t, prefix, worldRules)
}

// newWorldRules is newWorld with another rules template (see world for its fields);
// converged only applies to worldRules.
func newWorldRules(t testing.TB, prefix, rulesTemplate string) *world {
	t.Helper()
	w := &world{t: t, NS: namespace(t, prefix), Other: namespace(t, prefix+"-other"), Rule: fmt.Sprintf("%s-%04x", prefix, rand.IntN(1<<16))}
	w.Rules = writeRules(t, rulesTemplate, w)
	return w
}

// apply creates or updates a widget with the given labels and spec, as the test's own
// field manager.
func (w *world) apply(name string, labels map[string]string, spec map[string]any) {
	w.t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "faults.kubecel.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": w.NS},
		"spec":     spec,
	}}
	obj.SetLabels(labels)
	if _, err := dyn(w.t).Resource(widgets).Namespace(w.NS).Apply(context.Background(), name, obj, metav1.ApplyOptions{FieldManager: "faults-test", Force: true}); err != nil {
		w.t.Fatalf("apply widget %s: %v", name, err)
	}
}

// widget reads a widget.
func (w *world) widget(name string) (*unstructured.Unstructured, error) {
	return dyn(w.t).Resource(widgets).Namespace(w.NS).Get(context.Background(), name, metav1.GetOptions{})
}

func (w *world) create(name string, value int) {
	w.t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "faults.kubecel.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": w.NS},
		"spec":     map[string]any{"value": int64(value)},
	}}
	if _, err := dyn(w.t).Resource(widgets).Namespace(w.NS).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		w.t.Fatalf("create widget %s: %v", name, err)
	}
}

func (w *world) setValue(name string, value int) {
	w.t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"value":%d}}`, value)
	if _, err := dyn(w.t).Resource(widgets).Namespace(w.NS).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		w.t.Fatalf("patch widget %s: %v", name, err)
	}
}

func (w *world) delete(name string) {
	w.t.Helper()
	if err := dyn(w.t).Resource(widgets).Namespace(w.NS).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		w.t.Fatalf("delete widget %s: %v", name, err)
	}
}

// converged reports whether every widget has its status and its two children with the
// current value, no widget is left deleting (a finalizer nobody removes), and every
// object carrying the rule's label belongs to a live widget, exactly once per child id.
func (w *world) converged() (bool, string) {
	ctx := context.Background()
	list, err := dyn(w.t).Resource(widgets).Namespace(w.NS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, fmt.Sprintf("list widgets: %v", err)
	}
	live := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.GetDeletionTimestamp() != nil {
			return false, fmt.Sprintf("widget %s still deleting, finalizers %v", p.GetName(), p.GetFinalizers())
		}
		if msg := statusCurrent(p); msg != "" {
			return false, msg
		}
		live[string(p.GetUID())] = p
	}
	seen := map[string]int{}
	for _, ns := range []string{w.NS, w.Other} {
		cms, err := dyn(w.t).Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelRule + "=" + w.Rule})
		if err != nil {
			return false, fmt.Sprintf("list configmaps: %v", err)
		}
		for _, cm := range cms.Items {
			uid := cm.GetLabels()[contract.LabelParentUID]
			p, ok := live[uid]
			if !ok {
				return false, fmt.Sprintf("configmap %s/%s left behind by a parent that is gone (uid %s)", ns, cm.GetName(), uid)
			}
			want, _, _ := unstructured.NestedInt64(p.Object, "spec", "value")
			if got, _, _ := unstructured.NestedString(cm.Object, "data", "value"); got != strconv.FormatInt(want, 10) {
				return false, fmt.Sprintf("configmap %s/%s value %q, want %d", ns, cm.GetName(), got, want)
			}
			seen[uid+"/"+cm.GetLabels()[contract.LabelChild]]++
		}
	}
	for uid, p := range live {
		for _, id := range []string{"local", "remote"} {
			if n := seen[uid+"/"+id]; n != 1 {
				return false, fmt.Sprintf("widget %s has %d %q children, want 1", p.GetName(), n, id)
			}
		}
	}
	return true, ""
}

// statusCurrent returns why p's status does not reflect its current spec, or "".
func statusCurrent(p *unstructured.Unstructured) string {
	gen, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration")
	if gen != p.GetGeneration() {
		return fmt.Sprintf("widget %s observedGeneration %d, generation %d", p.GetName(), gen, p.GetGeneration())
	}
	want, _, _ := unstructured.NestedInt64(p.Object, "spec", "value")
	if got, _, _ := unstructured.NestedString(p.Object, "status", "value"); got != strconv.FormatInt(want, 10) {
		return fmt.Sprintf("widget %s status.value %q, spec.value %d", p.GetName(), got, want)
	}
	if status, _, msg := testenv.Condition(p, contract.ConditionSynced); status != "True" {
		return fmt.Sprintf("widget %s Synced=%q %s", p.GetName(), status, msg)
	}
	return ""
}

// names lists the widgets that exist (deleting or not).
func (w *world) names() []string {
	list, err := dyn(w.t).Resource(widgets).Namespace(w.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		w.t.Fatalf("list widgets: %v", err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.GetName())
	}
	slices.Sort(names)
	return names
}

// gone reports whether the widget no longer exists.
func (w *world) gone(name string) bool {
	_, err := dyn(w.t).Resource(widgets).Namespace(w.NS).Get(context.Background(), name, metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

// kubecelWrites counts the write requests kubecel sent (dry runs excluded) that keep
// accepts.
func kubecelWrites(t testing.TB, keep func(controlplane.AuditEvent) bool) int {
	t.Helper()
	events, err := cp.AuditEvents()
	if err != nil {
		t.Fatalf("read audit log: %v", err)
	}
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e.UserAgent, "kubecel") && !strings.Contains(e.RequestURI, "dryRun=All") && keep(e) {
			n++
		}
	}
	return n
}

// inNamespaces accepts events on objects in any of the namespaces.
func inNamespaces(nss ...string) func(controlplane.AuditEvent) bool {
	return func(e controlplane.AuditEvent) bool { return slices.Contains(nss, e.ObjectRef.Namespace) }
}

// looked has kubecel look at the named widgets again and waits until it has: it
// annotates each (nothing a rule reads), which queues its reconcile, and waits until
// the controller counted that many reconciles more with its queue empty. A check that
// nothing was written afterwards has given kubecel the chance to write.
func (w *world) looked(ctrl *controller, names ...string) {
	w.t.Helper()
	before := scrape(w.t, ctrl)
	for _, name := range names {
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"faults.kubecel.dev/looked":%q}}}`, strconv.FormatInt(time.Now().UnixNano(), 10))
		if _, err := dyn(w.t).Resource(widgets).Namespace(w.NS).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			w.t.Fatalf("annotate widget %s: %v", name, err)
		}
	}
	eventually(w.t, settle, func() (bool, string) {
		now, err := ctrl.scrape()
		if err != nil {
			return false, err.Error()
		}
		return now.reconciles >= before.reconciles+float64(len(names)) && now.depth == 0,
			fmt.Sprintf("%g reconciles since %d widgets were annotated, queue depth %g; want at least %d and 0", now.reconciles-before.reconciles, len(names), now.depth, len(names))
	})
}
