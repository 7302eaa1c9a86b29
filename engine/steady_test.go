package engine_test

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

const steadyRules = widgetRuleHead + `      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
          data: {size: "${string(parent.spec.size)}"}
      - id: service
        template:
          apiVersion: v1
          kind: Service
          metadata: {name: "${parent.metadata.name}"}
          spec:
            selector: {app: "${parent.metadata.name}"}
            ports: [{name: http, port: 80, targetPort: 8080}]
      - id: peers
        forEach: "[1, 2]"
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name + '-peer-' + string(each)}"}
          data: {peer: "${string(each)}"}
    status:
      fields:
        clusterIP: ${children.service.spec.clusterIP}
        size: ${parent.spec.size}
`

func TestSteadyStateSendsNoWrites(t *testing.T) {
	const parents = 100
	f := startController(t, steadyRules)
	inNamespace := f.controllerWrites
	before := f.ctrl.Reconciles()
	for i := range parents {
		f.create(widgets, widget(f.ns, fmt.Sprintf("s%03d", i), map[string]any{"size": int64(i)}))
	}
	for i := range parents {
		f.waitFor(widgets, f.ns, fmt.Sprintf("s%03d", i), func(o *unstructured.Unstructured) (bool, string) {
			ready, _, msg := testenv.Condition(o, contract.ConditionReady)
			return ready == "True" && nestedString(o, "status", "clusterIP") != "", fmt.Sprintf("Ready=%s %q", ready, msg)
		})
	}
	f.waitIdle()
	// Each parent's create is one event; the echoes of our own writes (four children
	// and the status) enqueue nothing, so most parents converge in one reconcile. A
	// parent is reconciled again only when an echo outruns the response it echoes.
	n := f.ctrl.Reconciles() - before
	t.Logf("%d parents converged in %d reconciles", parents, n)
	if n > parents*3/2 {
		t.Errorf("%d parents converged in %d reconciles, want at most %d: the echoes of our own writes requeue their parents", parents, n, parents*3/2)
	}
	converged := testenv.Writes(t, inNamespace)
	// creates of the parents + (4 children + 1 status) per parent, at most.
	if max := parents + parents*5; converged > max {
		t.Errorf("convergence took %d writes, want at most %d (children + 1 per parent)", converged, max)
		logRepeatedWrites(t, f.ns)
	}

	started := f.ctrl.Reconciles()
	f.ctrl.EnqueueAll()
	f.waitIdle()
	f.ctrl.EnqueueAll()
	f.waitIdle()
	// Reconciles counts them: kubecel run releases memory after such a burst by it.
	if n := f.ctrl.Reconciles() - started; n < 2*parents {
		t.Errorf("two resyncs of %d parents counted %d reconciles, want at least %d", parents, n, 2*parents)
	}
	if after := testenv.Writes(t, inNamespace); after != converged {
		t.Errorf("a resync of %d converged parents sent %d write requests, want 0", parents, after-converged)
		logRepeatedWrites(t, f.ns)
	}
}

// logRepeatedWrites logs, for a failed write count, the objects in ns written more than
// once, other writes (Events) and kubecel's Events, to show what was redundant.
func logRepeatedWrites(t *testing.T, ns string) {
	events, err := testenv.ControlPlane(t).AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, e := range events {
		if e.ObjectRef.Namespace == ns {
			counts[fmt.Sprintf("%s %s/%s %s", e.Verb, e.ObjectRef.Resource, e.ObjectRef.Subresource, e.ObjectRef.Name)]++
		}
	}
	for k, n := range counts {
		if n > 1 || strings.Contains(k, " events/") {
			t.Logf("%dx %s", n, k)
		}
	}
	list, err := testenv.Kube(t).CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		t.Logf("event %s %s %s: %s", e.Type, e.Reason, e.InvolvedObject.Name, e.Message)
	}
}

// controllerWrites keeps the audit events of writes in the fixture's namespace that are
// not the API server's own (its ClusterIP repair loop records an Event now and then about
// a Service created a moment ago): the controller's.
func (f *fixture) controllerWrites(e controlplane.AuditEvent) bool {
	return e.ObjectRef.Namespace == f.ns && !strings.HasPrefix(e.UserAgent, "kube-apiserver/")
}
