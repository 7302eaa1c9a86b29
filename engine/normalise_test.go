package engine_test

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

// normalisedRules produce children whose values the server stores in another form than
// the template gives them: quantities ("0.5" is stored as "500m", 1024Mi as "1Gi", the
// number 1 as "1"), and a Service whose empty clusterIP the server replaces with the one
// it allocated.
const normalisedRules = widgetRuleHead + `      - id: quota
        template:
          apiVersion: v1
          kind: ResourceQuota
          metadata: {name: "${parent.metadata.name}"}
          spec:
            hard: {cpu: "0.5", memory: 1024Mi, pods: 10}
      - id: deployment
        template:
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: "${parent.metadata.name}"}
          spec:
            selector: {matchLabels: {app: "${parent.metadata.name}"}}
            template:
              metadata: {labels: {app: "${parent.metadata.name}"}}
              spec:
                containers:
                  - name: app
                    image: registry.k8s.io/pause:3.10
                    ports: [{name: http, containerPort: 8080}]
                    resources:
                      requests: {cpu: "0.5", memory: "1024Mi"}
                      limits: {cpu: 1, memory: 2048Mi}
      - id: service
        template:
          apiVersion: v1
          kind: Service
          metadata: {name: "${parent.metadata.name}"}
          spec:
            clusterIP: ""
            selector: {app: "${parent.metadata.name}"}
            ports: [{name: http, port: 80, targetPort: http}]
    status:
      fields:
        clusterIP: ${children.service.spec.clusterIP}
`

var (
	resourceQuotas = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}
	deployments    = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

func TestNormalisedValuesSendNoWrites(t *testing.T) {
	const parents = 5
	f := startController(t, normalisedRules)
	byController := f.controllerWrites
	for i := range parents {
		f.create(widgets, widget(f.ns, fmt.Sprintf("n%d", i), nil))
	}
	for i := range parents {
		f.waitFor(widgets, f.ns, fmt.Sprintf("n%d", i), func(o *unstructured.Unstructured) (bool, string) {
			ready, _, msg := testenv.Condition(o, contract.ConditionReady)
			return ready == "True" && nestedString(o, "status", "clusterIP") != "", fmt.Sprintf("Ready=%s %q", ready, msg)
		})
	}
	// The server keeps the values in its own form: else this test shows nothing.
	quota := f.waitFor(resourceQuotas, f.ns, "n0", nil)
	deploy := f.waitFor(deployments, f.ns, "n0", nil)
	containers, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	limit := ""
	if len(containers) == 1 {
		limit, _, _ = unstructured.NestedString(containers[0].(map[string]any), "resources", "limits", "cpu")
	}
	if cpu, memory := nestedString(quota, "spec", "hard", "cpu"), nestedString(quota, "spec", "hard", "memory"); cpu != "500m" || memory != "1Gi" || limit != "1" {
		t.Fatalf("quota cpu %q memory %q, Deployment cpu limit %q: want the server's forms 500m, 1Gi and \"1\"", cpu, memory, limit)
	}
	f.waitIdle()
	converged := testenv.Writes(t, byController)
	// creates of the parents + (3 children + 1 status) per parent, at most.
	if max := parents + parents*4; converged > max {
		t.Errorf("convergence took %d writes, want at most %d (children + 1 per parent)", converged, max)
		logRepeatedWrites(t, f.ns)
	}

	resync := func(t *testing.T, what string) {
		before := testenv.Writes(t, byController)
		f.ctrl.EnqueueAll()
		f.waitIdle()
		f.ctrl.EnqueueAll()
		f.waitIdle()
		if after := testenv.Writes(t, byController); after != before {
			t.Errorf("%s: a resync of %d converged parents sent %d write requests, want 0", what, parents, after-before)
			logRepeatedWrites(t, f.ns)
		}
	}
	resync(t, "converged")

	// A new controller remembers nothing of what the old one applied.
	f.restart()
	f.waitIdle()
	resync(t, "after a restart")

	t.Run("a normalised field changed by someone else is restored", func(t *testing.T) {
		patch := `{"spec":{"hard":{"cpu":"2"}}}`
		if _, err := testenv.Dynamic(t).Resource(resourceQuotas).Namespace(f.ns).Patch(t.Context(), "n1", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "someone"}); err != nil {
			t.Fatal(err)
		}
		f.waitFor(resourceQuotas, f.ns, "n1", func(o *unstructured.Unstructured) (bool, string) {
			cpu := nestedString(o, "spec", "hard", "cpu")
			return cpu == "500m", fmt.Sprintf("spec.hard.cpu = %q", cpu)
		})
		f.waitIdle()
		resync(t, "after the repair")
	})

	t.Run("a field changed to the value's other form is left alone", func(t *testing.T) {
		// Someone writes what the server already stores: nothing changes, no write.
		patch := `{"spec":{"hard":{"memory":"1024Mi"}}}`
		if _, err := testenv.Dynamic(t).Resource(resourceQuotas).Namespace(f.ns).Patch(t.Context(), "n2", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "someone"}); err != nil {
			t.Fatal(err)
		}
		f.waitIdle()
		resync(t, "after a no-op edit")
	})
}
