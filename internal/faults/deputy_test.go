package faults

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

// deputyRules: "<Rule>-steer" puts a ConfigMap in the namespace the parent names without
// declaring crossNamespace; "<Rule>-secret" copies the parent's password into a Secret.
const deputyRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: {{.Rule}}-steer
    parent:
      apiVersion: faults.kubecel.dev/v1
      resource: widgets
      namespaces: [{{.NS}}]
      selector: {matchLabels: {kind: steer}}
    children:
      - id: planted
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}", namespace: "${parent.spec.target}"}
          data: {from: "${parent.metadata.namespace}"}
    status:
      fields: {target: "${parent.spec.target}"}
  - name: {{.Rule}}-secret
    parent:
      apiVersion: faults.kubecel.dev/v1
      resource: widgets
      namespaces: [{{.NS}}]
      selector: {matchLabels: {kind: secret}}
    children:
      - id: credentials
        template:
          apiVersion: v1
          kind: Secret
          metadata: {name: "${parent.spec.secretName}"}
          data: {password: "${bytes(parent.spec.password)}"}
    status:
      fields: {secretName: "${parent.spec.secretName}"}
`

// TestConfusedDeputy: a widget's spec cannot steer a child into a namespace unless the
// rule says crossNamespace: true; and the value of a Secret kubecel writes (or fails to
// write) never shows in its logs, its Events or `kubecel render`.
func TestConfusedDeputy(t *testing.T) {
	w := newWorldRules(t, "deputy", deputyRules)
	ctrl := startKubecel(t, w.Rules, cp.Kubeconfig)
	canary := fmt.Sprintf("canary-%016x", rand.Uint64())
	leaks := []string{canary, base64.StdEncoding.EncodeToString([]byte(canary))}

	w.apply("steer", map[string]string{"kind": "steer"}, map[string]any{"target": w.Other})
	w.apply("good", map[string]string{"kind": "secret"}, map[string]any{"secretName": "good", "password": canary})
	// An invalid name makes the apply fail: the error goes to the log and an Event.
	w.apply("bad", map[string]string{"kind": "secret"}, map[string]any{"secretName": "Bad_Name", "password": canary})

	eventually(t, settle, func() (bool, string) {
		p, err := w.widget("steer")
		if err != nil {
			return false, err.Error()
		}
		status, reason, msg := testenv.Condition(p, contract.ConditionSynced)
		return status == "False" && strings.Contains(msg, "crossNamespace: true"), fmt.Sprintf("Synced=%q %s %q", status, reason, msg)
	})
	if _, err := kube(t).CoreV1().ConfigMaps(w.Other).Get(context.Background(), "steer", metav1.GetOptions{}); err == nil {
		t.Errorf("the widget planted a ConfigMap in %s without crossNamespace", w.Other)
	}

	eventually(t, settle, func() (bool, string) {
		s, err := kube(t).CoreV1().Secrets(w.NS).Get(context.Background(), "good", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		p, err := w.widget("bad")
		if err != nil {
			return false, err.Error()
		}
		status, _, msg := testenv.Condition(p, contract.ConditionSynced)
		return string(s.Data["password"]) == canary && status == "False", fmt.Sprintf("secret written: %t; bad widget Synced=%q %q", string(s.Data["password"]) == canary, status, msg)
	})

	events, err := kube(t).CoreV1().Events(w.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var eventText strings.Builder
	for _, e := range events.Items {
		fmt.Fprintln(&eventText, e.Reason, e.Message)
	}
	if !strings.Contains(eventText.String(), "Bad_Name") {
		t.Errorf("no Event reports the failed Secret apply; events:\n%s", eventText.String())
	}

	parent, err := w.widget("good")
	if err != nil {
		t.Fatal(err)
	}
	parentFile := filepath.Join(t.TempDir(), "parent.json")
	data, err := parent.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(parentFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	rendered, renderErr, err := runKubecel(t, "render", "--rules", w.Rules, "-f", parentFile)
	if err != nil {
		t.Fatalf("%v\n%s", err, renderErr)
	}
	if !strings.Contains(rendered, "kind: Secret") {
		t.Errorf("render printed no Secret:\n%s", rendered)
	}

	for what, text := range map[string]string{"controller log": ctrl.logs.String(), "Events": eventText.String(), "render output": rendered + renderErr} {
		for _, leak := range leaks {
			if strings.Contains(text, leak) {
				t.Errorf("the Secret value %q appears in the %s", leak, what)
			}
		}
	}
	t.Logf("checked %d log lines, %d Events and %d bytes of render output", ctrl.logs.lines(), len(events.Items), len(rendered))
}
