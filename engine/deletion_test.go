package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"text/template"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

// deletionRules gives every widget three ConfigMaps, all in its namespace (owner
// references, no finalizer).
const deletionRules = widgetRuleHead + `      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-config"}
          data: {size: "${string(parent.spec.size)}"}
      - id: peers
        forEach: "[1, 2]"
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name + '-peer-' + string(each)}"}
          data: {peer: "${string(each)}"}
`

// childNames are the names deletionRules gives the children of widget name.
func childNames(name string) []string {
	return []string{name + "-config", name + "-peer-1", name + "-peer-2"}
}

// kubecelDeletes counts the fixture's controller's delete requests in its namespace that
// removed an object (response 200), by object name.
func (f *fixture) kubecelDeletes() map[string]int {
	f.t.Helper()
	events, err := testenv.ControlPlane(f.t).AuditEvents()
	if err != nil {
		f.t.Fatal(err)
	}
	return deletesBy(events, f.ns, f.userAgent())
}

func deletesBy(events []controlplane.AuditEvent, ns, userAgent string) map[string]int {
	got := map[string]int{}
	for _, e := range events {
		if e.Verb == "delete" && e.ObjectRef.Namespace == ns && e.UserAgent == userAgent && e.ResponseStatus.Code == 200 {
			got[e.ObjectRef.Name]++
		}
	}
	return got
}

func (f *fixture) deleteWidget(name string, policy metav1.DeletionPropagation) {
	f.t.Helper()
	err := testenv.Dynamic(f.t).Resource(widgets).Namespace(f.ns).Delete(f.t.Context(), name, metav1.DeleteOptions{PropagationPolicy: &policy})
	if err != nil {
		f.t.Fatalf("delete widget %s: %v", name, err)
	}
}

// TestForegroundDeletion: a parent deleted in the foreground waits for its children;
// kubecel deletes them as soon as the parent starts terminating, and the deletion
// completes.
func TestForegroundDeletion(t *testing.T) {
	f := startController(t, deletionRules)
	f.create(widgets, widget(f.ns, "w1", map[string]any{"size": int64(1)}))
	for _, name := range childNames("w1") {
		f.waitFor(configMaps, f.ns, name, nil)
	}
	f.deleteWidget("w1", metav1.DeletePropagationForeground)
	f.waitGone(widgets, f.ns, "w1")
	for _, name := range childNames("w1") {
		f.waitGone(configMaps, f.ns, name)
	}
}

// TestOrphanDeletion: kubectl delete --cascade=orphan. The children stay, the garbage
// collector removes their owner references, and kubecel deletes nothing: checked once
// the controller has handled a later parent, so it has seen the deletion.
func TestOrphanDeletion(t *testing.T) {
	f := startController(t, deletionRules)
	parent := f.create(widgets, widget(f.ns, "w1", map[string]any{"size": int64(1)}))
	for _, name := range childNames("w1") {
		f.waitFor(configMaps, f.ns, name, nil)
	}
	f.deleteWidget("w1", metav1.DeletePropagationOrphan)
	f.waitGone(widgets, f.ns, "w1")
	for _, name := range childNames("w1") {
		f.waitFor(configMaps, f.ns, name, func(o *unstructured.Unstructured) (bool, string) {
			return !slices.ContainsFunc(o.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == parent.GetUID() }),
				fmt.Sprintf("owner references %v still name the parent", o.GetOwnerReferences())
		})
	}
	f.create(widgets, widget(f.ns, "w2", map[string]any{"size": int64(1)}))
	for _, name := range childNames("w2") {
		f.waitFor(configMaps, f.ns, name, nil)
	}
	f.waitIdle()
	for _, name := range childNames("w1") {
		if _, err := f.get(configMaps, f.ns, name); err != nil {
			t.Errorf("orphaned child %s: %v", name, err)
		}
	}
	if got := f.kubecelDeletes(); len(got) != 0 {
		t.Errorf("kubecel deleted %v; want nothing", got)
	}
}

// TestDeletionWhileStopped: with kubecel down, deleting a parent still takes its
// children away (the garbage collector follows the owner references), and a controller
// started afterwards has nothing to do for it.
func TestDeletionWhileStopped(t *testing.T) {
	f := startController(t, deletionRules)
	f.create(widgets, widget(f.ns, "w1", map[string]any{"size": int64(1)}))
	for _, name := range childNames("w1") {
		f.waitFor(configMaps, f.ns, name, nil)
	}
	f.stop()
	f.deleteWidget("w1", metav1.DeletePropagationBackground)
	for _, name := range childNames("w1") {
		f.waitGone(configMaps, f.ns, name)
	}
	if got := f.kubecelDeletes(); len(got) != 0 {
		t.Errorf("kubecel deleted %v while stopped", got)
	}
}

// TestDeletionByKubecel runs on a control plane of its own without
// kube-controller-manager, so without a garbage collector: the children of a deleted
// parent can only go because kubecel deletes them. The audit log shows exactly one
// successful delete of each by the controller.
func TestDeletionByKubecel(t *testing.T) {
	cp, err := controlplane.Start(t.Context(), controlplane.Options{AuditWrites: true, CRDs: []*apiextensionsv1.CustomResourceDefinition{
		widgetCRD("widgets", "Widget", apiextensionsv1.NamespaceScoped, true),
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stop control plane: %v", err)
		}
	})
	const ns, rule, userAgent = "deletion", "deletion", "kubecel-engine-test/deletion"
	kube, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := template.Must(template.New("rules").Parse(deletionRules)).Execute(&text, map[string]string{"NS": ns, "Rule": rule}); err != nil {
		t.Fatal(err)
	}
	rs, err := rules.Load(text.Bytes(), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(cp.Config)
	cfg.UserAgent = userAgent
	ctrl, err := engine.New(cfg, engine.Options{Workers: 4, Identity: testenv.Identity(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig())))
	ctrl.SetRules(ctx, rs)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ctrl.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })

	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	parent := &unstructured.Unstructured{Object: widget(ns, "w1", map[string]any{"size": int64(1)})}
	if _, err := dyn.Resource(widgets).Namespace(ns).Create(t.Context(), parent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	exists := func(name string) (bool, error) {
		_, err := dyn.Resource(configMaps).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	for _, name := range childNames("w1") {
		testenv.Eventually(t, 60*time.Second, func() (bool, string) {
			ok, err := exists(name)
			return ok, fmt.Sprintf("child %s not created (%v)", name, err)
		})
	}
	if err := dyn.Resource(widgets).Namespace(ns).Delete(t.Context(), "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range childNames("w1") {
		testenv.Eventually(t, 60*time.Second, func() (bool, string) {
			ok, err := exists(name)
			return !ok && err == nil, fmt.Sprintf("child %s still there (%v)", name, err)
		})
	}
	events, err := cp.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, name := range childNames("w1") {
		want[name] = 1
	}
	if diff := cmp.Diff(want, deletesBy(events, ns, userAgent)); diff != "" {
		t.Errorf("kubecel's successful deletes (-want +got):\n%s", diff)
	}
}
