package engine_test

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

const forEachRules = widgetRuleHead + `      - id: env
        forEach: parent.spec.?envs.orValue([])
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata:
            name: ${parent.metadata.name + "-" + each}
          data:
            index: ${string(index)}
      - id: service
        when: parent.spec.?expose.orValue(false)
        template:
          apiVersion: v1
          kind: Service
          metadata:
            name: ${parent.metadata.name}
          spec:
            ports:
              - port: 80
`

// childNames lists the names of the parent's children of one child id.
func (f *fixture) childNames(gvrName string, id string) []string {
	f.t.Helper()
	gvr := configMaps
	if gvrName == "services" {
		gvr = services
	}
	list, err := testenv.Dynamic(f.t).Resource(gvr).Namespace(f.ns).List(f.t.Context(), metav1.ListOptions{
		LabelSelector: contract.LabelRule + "=" + f.rule + "," + contract.LabelChild + "=" + id,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	var names []string
	for _, o := range list.Items {
		if o.GetDeletionTimestamp() == nil {
			names = append(names, o.GetName())
		}
	}
	return names
}

func (f *fixture) waitChildren(resource, id string, want ...string) {
	f.t.Helper()
	f.eventually(func() (bool, string) {
		got := f.childNames(resource, id)
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return true, ""
		}
		return false, fmt.Sprintf("%s children %q: got %v, want %v", resource, id, got, want)
	})
}

func TestForEachGrowsAndShrinks(t *testing.T) {
	f := startController(t, forEachRules)
	f.create(widgets, widget(f.ns, "w", map[string]any{"envs": []any{"dev", "prod"}}))
	f.waitChildren("configmaps", "env", "w-dev", "w-prod")
	cm := f.waitFor(configMaps, f.ns, "w-prod", nil)
	if got := nestedString(cm, "data", "index"); got != "1" {
		t.Errorf("w-prod data.index = %q, want 1", got)
	}

	f.patchSpec(widgets, f.ns, "w", `{"envs":["dev","prod","test"]}`)
	f.waitChildren("configmaps", "env", "w-dev", "w-prod", "w-test")

	f.patchSpec(widgets, f.ns, "w", `{"envs":["test"]}`)
	f.waitChildren("configmaps", "env", "w-test")
	cm = f.waitFor(configMaps, f.ns, "w-test", func(o *unstructured.Unstructured) (bool, string) {
		return nestedString(o, "data", "index") == "0", "index not updated to 0"
	})
	_ = cm
}

func TestWhenTogglesChild(t *testing.T) {
	f := startController(t, forEachRules)
	f.create(widgets, widget(f.ns, "w", map[string]any{"expose": false}))
	f.waitFor(widgets, f.ns, "w", nil)
	f.waitIdle()
	if got := f.childNames("services", "service"); len(got) != 0 {
		t.Fatalf("service exists while expose=false: %v", got)
	}
	f.patchSpec(widgets, f.ns, "w", `{"expose":true}`)
	f.waitChildren("services", "service", "w")
	f.patchSpec(widgets, f.ns, "w", `{"expose":false}`)
	f.waitChildren("services", "service")
}

const readyWhenRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: {{.Rule}}
    parent:
      apiVersion: engine.kubecel.dev/v1
      resource: widgets
      namespaces: [{{.NS}}]
      when: parent.spec.?role.orValue("") == "app"   # the backend Widget is not a parent
    children:
      - id: backend
        template:
          apiVersion: engine.kubecel.dev/v1
          kind: Widget
          metadata:
            name: ${parent.metadata.name}-backend
          spec:
            role: backend
        readyWhen: self.?status.?phase.orValue("") == "Running"
      - id: frontend
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata:
            name: ${parent.metadata.name}-frontend
          data:
            backend: ${children.backend.metadata.name}
    status:
      fields:
        backendPhase: ${children.backend.?status.?phase.orValue("unknown")}
`

func TestReadyWhenHoldsBackDependent(t *testing.T) {
	f := startController(t, readyWhenRules)
	f.create(widgets, widget(f.ns, "app", map[string]any{"role": "app"}))
	f.waitFor(widgets, f.ns, "app-backend", nil)
	f.waitFor(widgets, f.ns, "app", func(o *unstructured.Unstructured) (bool, string) {
		status, reason, msg := testenv.Condition(o, contract.ConditionReady)
		return status == "False" && reason == contract.ReasonWaiting, fmt.Sprintf("Ready=%s %s %q", status, reason, msg)
	})
	f.waitIdle()
	if _, err := f.get(configMaps, f.ns, "app-frontend"); err == nil {
		t.Fatal("frontend was created before the backend was ready")
	}

	// The backend becomes ready (as its own controller would report). Read it again:
	// the controller wrote its status (RuleNotApplicable) since it was created.
	backend, err := f.get(widgets, f.ns, "app-backend")
	if err != nil {
		t.Fatal(err)
	}
	backend.Object["status"] = map[string]any{"phase": "Running"}
	if _, err := testenv.Dynamic(t).Resource(widgets).Namespace(f.ns).UpdateStatus(t.Context(), backend, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := f.waitFor(configMaps, f.ns, "app-frontend", nil)
	if got := nestedString(cm, "data", "backend"); got != "app-backend" {
		t.Errorf("frontend data.backend = %q, want app-backend", got)
	}
	f.waitFor(widgets, f.ns, "app", func(o *unstructured.Unstructured) (bool, string) {
		status, _, msg := testenv.Condition(o, contract.ConditionReady)
		return status == "True" && nestedString(o, "status", "backendPhase") == "Running", fmt.Sprintf("Ready=%s %q status=%v", status, msg, o.Object["status"])
	})
}

func TestParentOutsideWhenIsLeftAlone(t *testing.T) {
	f := startController(t, readyWhenRules)
	// role "backend": the rule's parent `when` is false for this Widget.
	created := f.create(widgets, widget(f.ns, "other", map[string]any{"role": "backend"}))
	f.create(widgets, widget(f.ns, "app", map[string]any{"role": "app"}))
	f.waitFor(widgets, f.ns, "app-backend", nil)
	f.waitIdle()
	got, err := f.get(widgets, f.ns, "other")
	if err != nil {
		t.Fatal(err)
	}
	if got.GetResourceVersion() != created.GetResourceVersion() {
		t.Errorf("a parent the rule does not apply to was written: status %v", got.Object["status"])
	}
}
