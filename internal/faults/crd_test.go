package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// crdRules: "<Rule>-gadget" runs on a CRD the test installs, deletes and reinstalls;
// "<Rule>-never" names a kind no API server serves; "<Rule>" is worldRules.
const crdRules = rulesHead + `  - name: {{.Rule}}-gadget
    parent:
      apiVersion: faults.kubecel.dev/v1
      resource: gadgets
      namespaces: [{{.NS}}]
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "gadget-${parent.metadata.name}"}
          data: {value: "${string(parent.spec.value)}"}
    status:
      fields: {value: "${string(parent.spec.value)}"}
  - name: {{.Rule}}-never
    parent:
      apiVersion: faults.kubecel.dev/v1
      resource: nevers
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
` + worldParent + worldChildren

// TestCRDDeletedUnderRunningRule: the gadgets CRD goes away under its running rule and
// comes back. The rule waits meanwhile without flooding the log, the widget rule keeps
// working, and gadgets are served again once the CRD is back. A rule whose kind never
// exists waits the whole time without disturbing anything.
func TestCRDDeletedUnderRunningRule(t *testing.T) {
	crds := apiextensionsclient.NewForConfigOrDie(cp.Config).ApiextensionsV1().CustomResourceDefinitions()
	installGadgets(t, crds)
	t.Cleanup(func() {
		_ = crds.Delete(context.Background(), "gadgets.faults.kubecel.dev", metav1.DeleteOptions{})
		waitCRDGone(t, crds)
	})
	w := newWorldRules(t, "crd", crdRules)
	ctrl := startKubecel(t, w.Rules, cp.Kubeconfig)
	createGadget(t, w.NS, "g1", 1)
	w.create("w1", 1)
	eventually(t, settle, func() (bool, string) { return gadgetConverged(t, w.NS, "g1", 1) })
	eventually(t, settle, w.converged)

	if err := crds.Delete(context.Background(), "gadgets.faults.kubecel.dev", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitCRDGone(t, crds)
	// The rule must be reported waiting (the engine re-checks discovery every second for
	// a while after a CRD event, because discovery lags the deletion).
	if pending, waited := waitPending(ctrl, w.Rule+"-gadget", 20*time.Second); pending {
		t.Logf("the gadget rule was reported waiting %s after the CRD was gone", waited.Round(time.Millisecond))
	} else {
		t.Errorf("the gadget rule was not reported waiting within %s of the CRD's deletion", waited.Round(time.Second))
	}
	w.create("w2", 2)
	w.setValue("w1", 10)
	eventually(t, settle, w.converged)

	quietFrom := ctrl.logs.lines()
	time.Sleep(outage())
	quiet := ctrl.logs.lines() - quietFrom
	t.Logf("%d log lines in %s while the CRD was absent (%s since it went)", quiet, outage(), time.Since(start).Round(time.Second))
	if quiet > 10 {
		t.Errorf("%d log lines in a quiet %s while a rule waits for its CRD, want at most 10:\n%s", quiet, outage(), ctrl.logs.tail(quiet))
	}

	installGadgets(t, crds)
	createGadget(t, w.NS, "g2", 2)
	took := eventually(t, settle, func() (bool, string) { return gadgetConverged(t, w.NS, "g2", 2) })
	t.Logf("a new gadget converged %s after the CRD was reinstalled", took.Round(time.Millisecond))
	eventually(t, settle, w.converged)
	if !ctrl.running() {
		t.Error("kubecel exited")
	}
}

// waitPending polls /readyz until it lists rule as waiting or timeout passes.
func waitPending(ctrl *controller, rule string, timeout time.Duration) (bool, time.Duration) {
	start := time.Now()
	for time.Since(start) < timeout {
		if _, body, err := ctrl.get("/readyz"); err == nil && strings.Contains(body, rule) {
			return true, time.Since(start)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false, time.Since(start)
}

func waitCRDGone(t testing.TB, crds interface {
	Get(context.Context, string, metav1.GetOptions) (*apiextensionsv1.CustomResourceDefinition, error)
}) {
	t.Helper()
	eventually(t, settle, func() (bool, string) {
		_, err := crds.Get(context.Background(), "gadgets.faults.kubecel.dev", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("gadgets CRD still there: %v", err)
	})
}

func installGadgets(t testing.TB, crds interface {
	Create(context.Context, *apiextensionsv1.CustomResourceDefinition, metav1.CreateOptions) (*apiextensionsv1.CustomResourceDefinition, error)
	Get(context.Context, string, metav1.GetOptions) (*apiextensionsv1.CustomResourceDefinition, error)
}) {
	t.Helper()
	if _, err := crds.Create(context.Background(), freeFormCRD("gadgets", "Gadget"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create gadgets CRD: %v", err)
	}
	eventually(t, settle, func() (bool, string) {
		crd, err := crds.Get(context.Background(), "gadgets.faults.kubecel.dev", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, "gadgets CRD not established"
	})
}

func createGadget(t testing.TB, ns, name string, value int) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "faults.kubecel.dev/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"value": int64(value)},
	}}
	// Right after the CRD is established the apiserver may still answer NotFound for a
	// moment: retry.
	eventually(t, settle, func() (bool, string) {
		_, err := dyn(t).Resource(gadgets).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{})
		return err == nil, fmt.Sprintf("create gadget %s: %v", name, err)
	})
}

// gadgetConverged reports whether a gadget's ConfigMap and status carry its value.
func gadgetConverged(t testing.TB, ns, name string, value int) (bool, string) {
	want := fmt.Sprint(value)
	cm, err := kube(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "gadget-"+name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	if cm.Data["value"] != want {
		return false, fmt.Sprintf("configmap value %q, want %s", cm.Data["value"], want)
	}
	g, err := dyn(t).Resource(gadgets).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	if msg := statusCurrent(g); msg != "" {
		return false, msg
	}
	return true, ""
}
