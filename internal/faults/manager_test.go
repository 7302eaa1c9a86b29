package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/rules/contract"
)

// deploymentRules gives every widget a Deployment whose replicas the rule leaves alone.
const deploymentRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: {{.Rule}}
    parent:
      apiVersion: faults.kubecel.dev/v1
      resource: widgets
      namespaces: [{{.NS}}]
    children:
      - id: app
        template:
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: "${parent.metadata.name}"}
          spec:
            selector: {matchLabels: {app: "${parent.metadata.name}"}}
            template:
              metadata: {labels: {app: "${parent.metadata.name}"}}
              spec:
                containers: [{name: app, image: "${parent.spec.image}"}]
`

// TestForeignFieldManager: an "autoscaler" owns spec.replicas of a Deployment kubecel
// manages. kubecel keeps applying its own fields (a new image) and never takes the
// replicas back; once converged it sends no writes to the Deployment at all.
func TestForeignFieldManager(t *testing.T) {
	w := newWorldRules(t, "manager", deploymentRules)
	ctrl := startKubecel(t, w.Rules, cp.Kubeconfig)
	w.apply("app", nil, map[string]any{"image": "example.com/app:1"})
	waitImage(t, w.NS, "app", "example.com/app:1")

	scale := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "app", "namespace": w.NS},
		"spec":     map[string]any{"replicas": int64(5)},
	}}
	if _, err := dyn(t).Resource(deploys).Namespace(w.NS).Apply(context.Background(), "app", scale, metav1.ApplyOptions{FieldManager: "autoscaler"}); err != nil {
		t.Fatalf("autoscaler apply: %v", err)
	}
	toDeployment := func(e controlplane.AuditEvent) bool {
		return e.ObjectRef.Namespace == w.NS && e.ObjectRef.Resource == "deployments" && e.ObjectRef.Name == "app"
	}
	afterScale := kubecelWrites(t, toDeployment)

	w.apply("app", nil, map[string]any{"image": "example.com/app:2"})
	d := waitImage(t, w.NS, "app", "example.com/app:2")
	if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 5 {
		t.Errorf("replicas = %d after kubecel's apply, want the autoscaler's 5", r)
	}
	for _, mf := range d.GetManagedFields() {
		if mf.Manager == contract.FieldManager && mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), `"f:replicas"`) {
			t.Errorf("kubecel owns spec.replicas: %s", mf.FieldsV1.GetRawString())
		}
	}
	imageWrites := kubecelWrites(t, toDeployment) - afterScale
	w.looked(ctrl, "app")
	quiet := kubecelWrites(t, toDeployment) - afterScale - imageWrites
	t.Logf("kubecel writes to the Deployment: %d for the new image, %d while quiet", imageWrites, quiet)
	if imageWrites > 2 || quiet != 0 {
		t.Errorf("kubecel wrote the Deployment %d times for one image change and %d times while quiet, want at most 2 and 0", imageWrites, quiet)
	}
	d, err := dyn(t).Resource(deploys).Namespace(w.NS).Get(context.Background(), "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 5 {
		t.Errorf("replicas = %d at the end, want the autoscaler's 5", r)
	}
}

// waitImage waits until the Deployment runs image and returns it.
func waitImage(t testing.TB, ns, name, image string) *unstructured.Unstructured {
	t.Helper()
	var d *unstructured.Unstructured
	eventually(t, settle, func() (bool, string) {
		got, err := dyn(t).Resource(deploys).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		d = got
		containers, _, _ := unstructured.NestedSlice(got.Object, "spec", "template", "spec", "containers")
		if len(containers) == 1 {
			if c, _ := containers[0].(map[string]any); c["image"] == image {
				return true, ""
			}
		}
		return false, fmt.Sprintf("containers %v", containers)
	})
	return d
}
