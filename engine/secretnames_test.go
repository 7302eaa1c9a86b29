package engine_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// secretNamedRules read a widget's Secret <widget>-creds, and name from its token a
// ConfigMap ref (settings, which does not exist, so the child uses waits) and a child.
const secretNamedRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: {{.Rule}}
    parent:
      apiVersion: engine.kubecel.dev/v1
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

// TestNamesFromSecretDataAreWithheld: a ref and a child named from a Secret's token. The
// RefMissing condition names the ref's object withheld; a token change renames the
// child and the Pruned Event names the old one withheld; a token the API server refuses
// as a name fails the apply, and the ApplyFailed Event and the Synced condition neither
// quote it nor name the object. No Event or condition of the widget ever holds a token.
func TestNamesFromSecretDataAreWithheld(t *testing.T) {
	f := startController(t, secretNamedRules)
	tokens := []string{"t0ken-first", "t0ken-second", "T0KEN_BAD"}
	setToken := func(token string) {
		t.Helper()
		data := fmt.Sprintf(`{"data":{"token":%q}}`, base64.StdEncoding.EncodeToString([]byte(token)))
		if _, err := testenv.Kube(t).CoreV1().Secrets(f.ns).Patch(t.Context(), "w-creds", types.MergePatchType, []byte(data), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "w-creds", Namespace: f.ns}, Data: map[string][]byte{"token": []byte(tokens[0])}}
	if _, err := testenv.Kube(t).CoreV1().Secrets(f.ns).Create(t.Context(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.create(widgets, widget(f.ns, "w", map[string]any{}))
	f.waitFor(configMaps, f.ns, tokens[0], nil)
	f.waitFor(widgets, f.ns, "w", func(o *unstructured.Unstructured) (bool, string) {
		status, reason, msg := testenv.Condition(o, contract.ConditionReady)
		want := "refs.settings: ConfigMap <withheld>/<withheld> does not exist; uses waits for refs.settings"
		return status == "False" && reason == contract.ReasonRefMissing && msg == want, fmt.Sprintf("Ready=%s %s %q, want %q", status, reason, msg, want)
	})

	setToken(tokens[1])
	f.waitFor(configMaps, f.ns, tokens[1], nil)
	f.waitGone(configMaps, f.ns, tokens[0])
	f.waitEvent("w", "Pruned", `deleted ConfigMap <withheld>/<withheld> (child "named" no longer produced)`)

	setToken(tokens[2])
	f.waitFor(widgets, f.ns, "w", func(o *unstructured.Unstructured) (bool, string) {
		status, reason, msg := testenv.Condition(o, contract.ConditionSynced)
		return status == "False" && reason == contract.ReasonApplyFailed &&
				strings.Contains(msg, `child "named": ConfigMap <withheld>/<withheld>: apply: the API server refused it (Invalid, 422); its message is withheld`),
			fmt.Sprintf("Synced=%s %s %q", status, reason, msg)
	})
	f.waitEvent("w", contract.ReasonApplyFailed, `child "named": ConfigMap <withheld>/<withheld>: apply:`)

	w, err := f.get(widgets, f.ns, "w")
	if err != nil {
		t.Fatal(err)
	}
	texts := conditionsOf(w)
	events, err := testenv.Kube(t).CoreV1().Events(f.ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=w"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		texts = append(texts, e.Reason+" "+e.Message)
	}
	for _, text := range texts {
		for _, token := range tokens {
			if strings.Contains(strings.ToLower(text), strings.ToLower(token)) {
				t.Errorf("%q holds the token %q", text, token)
			}
		}
	}
	if !strings.Contains(strings.Join(texts, "\n"), rules.Withheld) {
		t.Errorf("no condition or Event names an object withheld:\n%s", strings.Join(texts, "\n"))
	}
}

// waitEvent waits for an Event on the object name of the fixture's namespace with this
// reason, whose message contains text.
func (f *fixture) waitEvent(name, reason, text string) {
	f.t.Helper()
	f.eventually(func() (bool, string) {
		list, err := testenv.Kube(f.t).CoreV1().Events(f.ns).List(f.t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=" + reason})
		if err != nil {
			return false, err.Error()
		}
		var got []string
		for _, e := range list.Items {
			if strings.Contains(e.Message, text) {
				return true, ""
			}
			got = append(got, e.Message)
		}
		return false, fmt.Sprintf("no %s Event with %q: %q", reason, text, got)
	})
}

// conditionsOf renders an object's conditions, one "Type Status Reason Message" each.
func conditionsOf(o *unstructured.Unstructured) []string {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	var out []string
	for _, c := range conds {
		m, _ := c.(map[string]any)
		out = append(out, fmt.Sprintf("%v %v %v %v", m["type"], m["status"], m["reason"], m["message"]))
	}
	return out
}
