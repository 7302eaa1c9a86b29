package engine_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/rulesource"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

// runWithLoader runs a controller whose rules come from src, files re-read every 200ms.
func runWithLoader(t *testing.T, src rulesource.Source, reg *prometheus.Registry, opts engine.Options) *engine.Controller {
	t.Helper()
	opts.Registry = reg
	opts.PendingRetry = 500 * time.Millisecond
	if opts.Identity == nil {
		opts.Identity = testenv.Identity(t)
	}
	ctrl, err := engine.New(testenv.Config(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig())))
	loader, err := rulesource.New(rulesource.Options{Sources: []rulesource.Source{src}, Apply: ctrl.SetRules,
		Registry: reg, Events: testenv.Kube(t), Interval: 200 * time.Millisecond})
	if err == nil {
		err = loader.Start(ctx)
	}
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = ctrl.Run(ctx) })
	wg.Go(func() { loader.Watch(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return ctrl
}

const configMapRulesV1 = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: RULE
    parent: {apiVersion: engine.kubecel.dev/v1, resource: widgets, namespaces: [NS]}
    children:
      - id: first
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-first"}
`

const configMapRulesV2 = configMapRulesV1 + `      - id: second
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-second"}
`

func TestRulesConfigMapHotReload(t *testing.T) {
	ns := testenv.Namespace(t)
	rule := fmt.Sprintf("cm%d", time.Now().UnixNano()%100000)
	render := func(s string) string { return strings.NewReplacer("RULE", rule, "NS", ns).Replace(s) }
	kube := testenv.Kube(t)
	cms := kube.CoreV1().ConfigMaps(ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kubecel-rules"}, Data: map[string]string{"rules.yaml": render(configMapRulesV1)}}
	if _, err := cms.Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	runWithLoader(t, rulesource.ConfigMap(kube, ns, "kubecel-rules"), reg, engine.Options{})
	f := &fixture{t: t, ns: ns, rule: rule}
	f.create(widgets, widget(ns, "w", map[string]any{}))
	f.waitFor(configMaps, ns, "w-first", nil)

	update := func(data string) {
		t.Helper()
		cm, err := cms.Get(t.Context(), "kubecel-rules", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["rules.yaml"] = data
		if _, err := cms.Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// A good edit adds a child to the running parent, without a restart.
	update(render(configMapRulesV2))
	f.waitFor(configMaps, ns, "w-second", nil)

	// A broken edit (a CEL error, and the second child gone) changes nothing.
	before := testenv.Writes(t, func(e controlplane.AuditEvent) bool {
		return e.ObjectRef.Namespace == ns && e.ObjectRef.Resource != "events"
	})
	update(strings.Replace(render(configMapRulesV1), `"${parent.metadata.name}-first"`, `"${parent.metadata.name +}-first"`, 1))
	f.eventually(func() (bool, string) {
		n := testenv.Counter(t, reg, "kubecel_rules_reload_total", "result", "error")
		return n >= 1, fmt.Sprintf("reload errors = %v", n)
	})
	var event corev1.Event
	f.eventually(func() (bool, string) {
		list, err := kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=kubecel-rules,reason=RulesLoadFailed"})
		if err != nil || len(list.Items) == 0 {
			return false, fmt.Sprintf("no RulesLoadFailed event (err %v)", err)
		}
		event = list.Items[0]
		return true, ""
	})
	if event.Type != corev1.EventTypeWarning || !strings.Contains(event.Message, "parent.metadata.name +") {
		t.Errorf("event %s %q: want a Warning naming the broken expression", event.Type, event.Message)
	}
	// The controller runs on after the broken edit, with the last good rules: a widget
	// created now gets both children. (Had the edit reached the controller, w2 would get
	// no second child, and w's would be pruned.)
	f.create(widgets, widget(ns, "w2", map[string]any{}))
	f.waitFor(configMaps, ns, "w2-first", nil)
	f.waitFor(configMaps, ns, "w2-second", nil)
	if _, err := f.get(configMaps, ns, "w-second"); err != nil {
		t.Errorf("a failed reload pruned a child: %v", err)
	}
	if after := testenv.Writes(t, func(e controlplane.AuditEvent) bool {
		return e.ObjectRef.Namespace == ns && e.ObjectRef.Resource != "events" && e.ObjectRef.Name != "w2" && !strings.HasPrefix(e.ObjectRef.Name, "w2-")
	}); after != before+1 {
		t.Errorf("writes during the broken edit: %d, want only the ConfigMap update", after-before)
	}

	// Fixing it resumes: the second child is no longer produced and is pruned.
	update(render(configMapRulesV1))
	f.waitGone(configMaps, ns, "w-second")
}

const lateRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: {{.Rule}}
    parent: {apiVersion: late.kubecel.dev/v1, resource: gadgets}
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-gadget"}
  - name: {{.Rule}}-other
    parent: {apiVersion: engine.kubecel.dev/v1, resource: widgets, namespaces: [{{.NS}}]}
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-widget"}
`

func TestRuleWaitsForItsCRD(t *testing.T) {
	f := &fixture{t: t, ns: testenv.Namespace(t), rule: fmt.Sprintf("late%d", time.Now().UnixNano()%100000)}
	ctrl := runWithLoader(t, rulesource.File(f.rulesFile(lateRules)), prometheus.NewRegistry(), engine.Options{})
	f.ctrl = ctrl
	pending := func() []string { _, p := ctrl.Ready(); return p }
	f.eventually(func() (bool, string) {
		return slices.Contains(pending(), f.rule), fmt.Sprintf("pending %v", pending())
	})
	// The other rule runs meanwhile.
	f.create(widgets, widget(f.ns, "a", map[string]any{}))
	f.waitFor(configMaps, f.ns, "a-widget", nil)

	crds := apiextensionsclient.NewForConfigOrDie(testenv.Config(t)).ApiextensionsV1().CustomResourceDefinitions()
	crd := widgetCRD("gadgets", "Gadget", apiextensionsv1.NamespaceScoped, true)
	crd.Name, crd.Spec.Group = "gadgets.late.kubecel.dev", "late.kubecel.dev"
	if _, err := crds.Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gadgets := schema.GroupVersionResource{Group: "late.kubecel.dev", Version: "v1", Resource: "gadgets"}
	f.eventually(func() (bool, string) {
		_, err := testenv.Dynamic(t).Resource(gadgets).Namespace(f.ns).Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "late.kubecel.dev/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g"}}}, metav1.CreateOptions{})
		return err == nil, fmt.Sprintf("create gadget: %v", err)
	})
	f.waitFor(configMaps, f.ns, "g-gadget", nil)

	// The CRD goes away: that rule waits again, the other keeps working.
	if err := crds.Delete(t.Context(), crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually(func() (bool, string) {
		return slices.Contains(pending(), f.rule), fmt.Sprintf("pending %v", pending())
	})
	f.create(widgets, widget(f.ns, "b", map[string]any{}))
	f.waitFor(configMaps, f.ns, "b-widget", nil)
}

func TestRemovedRuleReleasesItsParents(t *testing.T) {
	target := testenv.Namespace(t)
	f := &fixture{t: t, ns: testenv.Namespace(t), rule: fmt.Sprintf("rm%d", time.Now().UnixNano()%100000)}
	path := f.rulesFile(strings.ReplaceAll(crossNamespaceRules, "{{.Cross}}", "true"))
	runWithLoader(t, rulesource.File(path), prometheus.NewRegistry(), engine.Options{})
	f.create(widgets, widget(f.ns, "x", map[string]any{"target": target}))
	f.waitFor(configMaps, target, f.ns+"-x", nil)
	f.waitFor(widgets, f.ns, "x", func(o *unstructured.Unstructured) (bool, string) {
		return slices.Contains(o.GetFinalizers(), contract.FinalizerFor(f.rule)), "no finalizer yet"
	})

	// The rule is deliberately removed: its parent loses the finalizer (so it can be
	// deleted), its children stay.
	if err := os.WriteFile(path, []byte("apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.waitFor(widgets, f.ns, "x", func(o *unstructured.Unstructured) (bool, string) {
		return !slices.Contains(o.GetFinalizers(), contract.FinalizerFor(f.rule)), fmt.Sprintf("finalizers %v", o.GetFinalizers())
	})
	if _, err := f.get(configMaps, target, f.ns+"-x"); err != nil {
		t.Errorf("child of a removed rule was deleted: %v", err)
	}
}
