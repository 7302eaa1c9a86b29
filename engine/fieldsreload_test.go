package engine_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/rulesource"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

// typoRules gives each Widget a Deployment and writes the Widget's status.
const typoRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: RULE
    parent: {apiVersion: engine.kubecel.dev/v1, resource: widgets, namespaces: [NS]}
    children:
      - id: deployment
        template:
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: "${parent.metadata.name}"}
          spec:
            replicas: 1
            selector: {matchLabels: {app: "${parent.metadata.name}"}}
            template:
              metadata: {labels: {app: "${parent.metadata.name}"}}
              spec:
                containers: [{name: app, image: "registry.example/app:1"}]
    status:
      fields:
        deployment: "${parent.metadata.name}"
`

// TestTemplateTypoRefusedAtReload edits the rules ConfigMap of a running controller so
// that a template misspells a field (replica for replicas). The API server would refuse
// every apply of that template; the controller refuses the edit when it loads it, with
// the message kubecel check gives, keeps running the last good rules, and writes no
// parent and no child because of it.
func TestTemplateTypoRefusedAtReload(t *testing.T) {
	ns := testenv.Namespace(t)
	rule := fmt.Sprintf("typo%d", time.Now().UnixNano()%100000)
	good := strings.NewReplacer("RULE", rule, "NS", ns).Replace(typoRules)
	bad := strings.Replace(good, "replicas: 1", "replica: 1", 1)
	kube := testenv.Kube(t)
	cms := kube.CoreV1().ConfigMaps(ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kubecel-rules"}, Data: map[string]string{"rules.yaml": good}}
	if _, err := cms.Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	runWithLoader(t, rulesource.ConfigMap(kube, ns, "kubecel-rules"), reg, engine.Options{})
	f := &fixture{t: t, ns: ns, rule: rule}
	f.create(widgets, widget(ns, "w", map[string]any{}))
	f.waitFor(deployments, ns, "w", nil)
	f.waitFor(widgets, ns, "w", func(u *unstructured.Unstructured) (bool, string) {
		got := nestedString(u, "status", "deployment")
		return got == "w", fmt.Sprintf("status.deployment = %q", got)
	})

	// What kubecel check says of the edit: one error, the typo and the field meant.
	_, err := rules.LoadDocuments([]rules.Document{{Source: "configmap " + ns + "/kubecel-rules key rules.yaml", Data: []byte(bad)}}, rules.Options{})
	var want rules.ErrorList
	if !errors.As(err, &want) || len(want) != 1 || !strings.Contains(want[0].Message, "did you mean 'replicas'") {
		t.Fatalf("the edit loads with %v; want one error naming replicas", err)
	}

	before := testenv.Writes(t, func(e controlplane.AuditEvent) bool {
		return e.ObjectRef.Namespace == ns && e.ObjectRef.Resource != "events"
	})
	latest, err := cms.Get(t.Context(), "kubecel-rules", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	latest.Data["rules.yaml"] = bad
	if _, err := cms.Update(t.Context(), latest, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var event corev1.Event
	f.eventually(func() (bool, string) {
		list, err := kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=kubecel-rules,reason=" + rulesource.ReasonRulesLoadFailed})
		if err != nil || len(list.Items) == 0 {
			return false, fmt.Sprintf("no %s event (err %v)", rulesource.ReasonRulesLoadFailed, err)
		}
		event = list.Items[0]
		return true, ""
	})
	if event.Type != corev1.EventTypeWarning || !strings.Contains(event.Message, want[0].Error()) {
		t.Errorf("event %s %q\nwant a Warning with check's message %q", event.Type, event.Message, want[0].Error())
	}
	if n := testenv.Counter(t, reg, "kubecel_rules_reload_total", "result", "error"); n < 1 {
		t.Errorf("kubecel_rules_reload_total{result=error} = %v, want the refused edit counted", n)
	}

	// The last good rules run on: a Widget created now gets its Deployment with
	// replicas, and its status. Had the edit reached the controller, its apply would fail
	// and every Widget's status would be rewritten with the error.
	f.create(widgets, widget(ns, "w2", map[string]any{}))
	d := f.waitFor(deployments, ns, "w2", nil)
	if replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); replicas != 1 {
		t.Errorf("w2's Deployment has %d replicas, want 1 (the last good rules)", replicas)
	}
	f.waitFor(widgets, ns, "w2", func(u *unstructured.Unstructured) (bool, string) {
		got := nestedString(u, "status", "deployment")
		return got == "w2", fmt.Sprintf("status.deployment = %q", got)
	})
	after := testenv.Writes(t, func(e controlplane.AuditEvent) bool {
		return e.ObjectRef.Namespace == ns && e.ObjectRef.Resource != "events" && e.ObjectRef.Name != "w2"
	})
	if after != before+1 {
		t.Errorf("writes during the refused edit: %d, want only the ConfigMap's update", after-before)
	}
	w, err := f.get(widgets, ns, "w")
	if err != nil {
		t.Fatal(err)
	}
	if status, reason, message := testenv.Condition(w, "Synced"); status != "True" {
		t.Errorf("w's Synced condition is %s (%s: %s), want True", status, reason, message)
	}
}
