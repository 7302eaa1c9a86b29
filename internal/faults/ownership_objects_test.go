package faults

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// coreKinds names the kinds of the core resources the ownership tests create.
var coreKinds = map[schema.GroupVersionResource]string{configMaps: "ConfigMap", namespaces: "Namespace"}

// frozen is an object as the test made it: what kubecel must never change on an object
// it did not create.
type frozen struct {
	gvr             schema.GroupVersionResource
	kind            string
	Namespace, Name string
	UID             types.UID
	ResourceVersion string
	Deleting        bool
	Labels          map[string]string
	OwnerReferences []metav1.OwnerReference
	Data            map[string]string
}

func freeze(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) *frozen {
	data, _, _ := unstructured.NestedStringMap(obj.Object, "data")
	return &frozen{
		gvr: gvr, kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID(),
		ResourceVersion: obj.GetResourceVersion(), Deleting: obj.GetDeletionTimestamp() != nil,
		Labels: obj.GetLabels(), OwnerReferences: obj.GetOwnerReferences(), Data: data,
	}
}

func (f *frozen) String() string {
	if f.Namespace == "" {
		return f.kind + " " + f.Name
	}
	return f.kind + " " + f.Namespace + "/" + f.Name
}

// ownerList describes obj's owner references for messages.
func ownerList(obj *unstructured.Unstructured) string {
	var parts []string
	for _, o := range obj.GetOwnerReferences() {
		part := fmt.Sprintf("%s %s (%s)", o.Kind, o.Name, o.UID)
		if o.Controller != nil && *o.Controller {
			part += " controller"
		}
		parts = append(parts, part)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// createObject creates a core object (a ConfigMap or a Namespace) as another client
// would, and returns it frozen.
func createObject(t testing.TB, gvr schema.GroupVersionResource, ns, name string, labels, data map[string]string, owners []metav1.OwnerReference) *frozen {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": coreKinds[gvr]}}
	obj.SetNamespace(ns)
	obj.SetName(name)
	obj.SetLabels(labels)
	obj.SetOwnerReferences(owners)
	if data != nil {
		m := map[string]any{}
		for k, v := range data {
			m[k] = v
		}
		obj.Object["data"] = m
	}
	got, err := dyn(t).Resource(gvr).Namespace(ns).Create(t.Context(), obj, metav1.CreateOptions{FieldManager: "someone-else"})
	if err != nil {
		t.Fatalf("create %s %s/%s: %v", coreKinds[gvr], ns, name, err)
	}
	return freeze(gvr, got)
}

// untouched reads the object again and returns how it differs from what was frozen,
// ignoring the named fields of frozen; "" when it does not.
func untouched(t testing.TB, f *frozen, ignore ...string) string {
	t.Helper()
	got, err := dyn(t).Resource(f.gvr).Namespace(f.Namespace).Get(t.Context(), f.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("%s was deleted", f)
	case err != nil:
		t.Fatalf("read %s: %v", f, err)
	}
	opts := cmp.Options{cmpopts.IgnoreUnexported(frozen{}), cmpopts.EquateEmpty()}
	if len(ignore) > 0 {
		opts = append(opts, cmpopts.IgnoreFields(frozen{}, ignore...))
	}
	return cmp.Diff(f, freeze(f.gvr, got), opts)
}

// vanished is a condition that holds once the widget no longer exists; until then it says
// which finalizers hold it.
func (w *world) vanished(name string) func() (bool, string) {
	return func() (bool, string) {
		p, err := w.widget(name)
		switch {
		case apierrors.IsNotFound(err):
			return true, ""
		case err != nil:
			return false, err.Error()
		case p.GetDeletionTimestamp() != nil:
			return false, fmt.Sprintf("widget %s is still deleting, finalizers %v", name, p.GetFinalizers())
		}
		return false, fmt.Sprintf("widget %s is not being deleted", name)
	}
}

// startLoaded starts kubecel on the rules file and waits until it has loaded them; rules
// it refuses end the test with its log.
func startLoaded(t testing.TB, rulesFile string) *controller {
	t.Helper()
	ctrl := startKubecel(t, rulesFile, cp.Kubeconfig)
	ctrl.waitLoaded(t, 0)
	return ctrl
}

// rewriteRules renders the template into the rules file at path, which kubecel runs on,
// and waits until kubecel has reloaded it. The new rules must differ from the old.
func (c *controller) rewriteRules(t testing.TB, path, tmpl string, data any) {
	t.Helper()
	before := c.loads()
	// A rename replaces the file at once: kubecel never reads half of it.
	if err := os.Rename(writeRules(t, tmpl, data), path); err != nil {
		t.Fatal(err)
	}
	c.waitLoaded(t, before)
}

// loads counts the rules loads the process has logged: the first and each reload.
func (c *controller) loads() int { return strings.Count(c.logs.String(), `"Loaded rules"`) }

// loadFailures counts the reloads the process has refused.
func (c *controller) loadFailures() int {
	return strings.Count(c.logs.String(), `"Rules reload failed`)
}

// waitLoaded waits until the process has loaded rules more than before times.
func (c *controller) waitLoaded(t testing.TB, before int) {
	t.Helper()
	failures := c.loadFailures()
	eventually(t, settle, func() (bool, string) {
		if c.loads() > before {
			return true, ""
		}
		if !c.running() || c.loadFailures() > failures {
			t.Fatalf("kubecel did not load the rules; its log:\n%s", c.logs.tail(20))
		}
		return false, "kubecel has not loaded the rules"
	})
}
