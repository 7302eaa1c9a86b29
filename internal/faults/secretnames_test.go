package faults

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

// secretNamedRules read a widget's Secret <widget>-creds and name from its token a
// ConfigMap ref (settings, which does not exist, so the child uses waits) and a child.
const secretNamedRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: {{.Rule}}
    parent:
      apiVersion: faults.kubecel.dev/v1
      resource: widgets
      namespaces: [{{.NS}}]
    refs:
      - {id: creds, apiVersion: v1, kind: Secret, name: '${parent.metadata.name}-creds'}
      - {id: settings, apiVersion: v1, kind: ConfigMap, name: '${string(base64.decode(refs.creds.data.token))}-settings'}
    children:
      - id: named
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: '${string(base64.decode(refs.creds.data.token))}'}
      - id: uses
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: '${parent.metadata.name}-uses'}
          data: {v: '${refs.settings.data.v}'}
    status:
      fields: {seen: "yes"}
`

// TestSecretNamesWithheld: a rule names a ref and a child from a Secret's token. As the
// token changes (the child renamed: a prune) and becomes a name the API server refuses
// (a failed apply), no token shows in the controller's log, the namespace's Events, the
// widget's conditions, or the output of check, render, plan and trace; check warns about
// both names.
func TestSecretNamesWithheld(t *testing.T) {
	w := newWorldRules(t, "named", secretNamedRules)
	ctrl := startKubecel(t, w.Rules, cp.Kubeconfig)
	tokens := []string{fmt.Sprintf("canary-%016x", rand.Uint64()), fmt.Sprintf("canary-%016x", rand.Uint64()), fmt.Sprintf("Canary_%016x", rand.Uint64())}
	var leaks []string
	for _, token := range tokens {
		leaks = append(leaks, token, strings.ToLower(token), base64.StdEncoding.EncodeToString([]byte(token)))
	}
	secrets := kube(t).CoreV1().Secrets(w.NS)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "w-creds", Namespace: w.NS}, Data: map[string][]byte{"token": []byte(tokens[0])}}
	if _, err := secrets.Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setToken := func(token string) {
		t.Helper()
		patch := fmt.Sprintf(`{"data":{"token":%q}}`, base64.StdEncoding.EncodeToString([]byte(token)))
		if _, err := secrets.Patch(context.Background(), "w-creds", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w.apply("w", nil, map[string]any{})
	waitConfigMap := func(name string, exists bool) {
		t.Helper()
		eventually(t, settle, func() (bool, string) {
			_, err := w.configMapData(name, "x")
			return (err == nil) == exists, fmt.Sprintf("ConfigMap of the token exists: %t, want %t", err == nil, exists)
		})
	}
	waitConfigMap(tokens[0], true)
	eventually(t, settle, func() (bool, string) {
		p, err := w.widget("w")
		if err != nil {
			return false, err.Error()
		}
		status, reason, msg := testenv.Condition(p, contract.ConditionReady)
		return reason == contract.ReasonRefMissing && strings.Contains(msg, "ConfigMap <withheld>/<withheld> does not exist"), fmt.Sprintf("Ready=%q %s (the message is not shown here)", status, reason)
	})
	setToken(tokens[1])
	waitConfigMap(tokens[1], true)
	waitConfigMap(tokens[0], false)
	setToken(tokens[2])
	eventually(t, settle, func() (bool, string) {
		p, err := w.widget("w")
		if err != nil {
			return false, err.Error()
		}
		status, reason, _ := testenv.Condition(p, contract.ConditionSynced)
		return status == "False" && reason == contract.ReasonApplyFailed, fmt.Sprintf("Synced=%q %s", status, reason)
	})

	outputs := map[string]string{"controller log": ctrl.logs.String()}
	events, err := kube(t).CoreV1().Events(w.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		outputs["Events"] += e.Reason + " " + e.Message + "\n"
	}
	p, err := w.widget("w")
	if err != nil {
		t.Fatal(err)
	}
	conds, _ := json.Marshal(p.Object["status"])
	outputs["conditions"] = string(conds)
	for _, reason := range []string{"Pruned", contract.ReasonApplyFailed} {
		if !strings.Contains(outputs["Events"], reason+" ") || !strings.Contains(outputs["Events"], "ConfigMap <withheld>/<withheld>") {
			t.Errorf("no %s Event naming the child withheld; Events:\n%s", reason, outputs["Events"])
		}
	}

	// The commands, as users type them: check warns; render (offline, with the Secret as
	// it stood before the last change), plan and trace read the same names.
	_, checkErr, err := runKubecel(t, "check", "--rules", w.Rules)
	if err != nil {
		t.Fatalf("%v\n%s", err, checkErr)
	}
	outputs["check"] = checkErr
	for _, field := range []string{`ref "settings": name:`, `child "named": template.metadata.name:`} {
		if !strings.Contains(checkErr, field) || !strings.Contains(checkErr, "Secret data") {
			t.Errorf("check does not warn about %s computed from Secret data:\n%s", field, checkErr)
		}
	}
	dir := t.TempDir()
	secret.Data["token"] = []byte(tokens[1])
	secret.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}
	parentJSON, _ := p.MarshalJSON()
	secretJSON, _ := json.Marshal(secret)
	for name, data := range map[string][]byte{"parent.json": parentJSON, "secret.json": secretJSON} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rendered, renderErr, err := runKubecel(t, "render", "--rules", w.Rules, "-f", filepath.Join(dir, "parent.json"), "-f", filepath.Join(dir, "secret.json"))
	if err != nil {
		t.Fatalf("%v\n%s", err, renderErr)
	}
	outputs["render"] = rendered + renderErr
	if !strings.Contains(rendered, "name: <withheld>") || !strings.Contains(rendered, "refs.settings: ConfigMap <withheld>/<withheld> (missing") {
		t.Errorf("render shows no withheld name:\n%s", rendered)
	}
	// plan exits 1 on the apply the server refuses, 2 on changes: its output is what counts.
	planned, planErr, _ := runKubecel(t, "plan", "--rules", w.Rules, "--kubeconfig", cp.Kubeconfig)
	outputs["plan"] = planned + planErr
	traced, traceErr, _ := runKubecel(t, "trace", "widgets.faults.kubecel.dev/w", "-n", w.NS, "--rules", w.Rules, "--kubeconfig", cp.Kubeconfig)
	outputs["trace"] = traced + traceErr
	if !strings.Contains(traced, "named") || !strings.Contains(traced, "settings") {
		t.Errorf("trace shows neither the child nor the ref:\n%s", traced)
	}

	for what, text := range outputs {
		for _, leak := range leaks {
			if strings.Contains(text, leak) {
				t.Errorf("the token %q appears in the %s:\n%s", leak, what, text)
			}
		}
	}
	t.Logf("checked %d log lines, %d Events, and the output of check, render, plan and trace", ctrl.logs.lines(), len(events.Items))
}
