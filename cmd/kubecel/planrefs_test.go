package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/internal/testenv"
)

// planRefsRules: each Gadget reads the Secret its spec names and copies its key names.
const planRefsRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: planrefs
    parent:
      apiVersion: plan.kubecel.dev/v1
      resource: gadgets
      namespaces: [%s]
    refs:
      - {id: db, apiVersion: v1, kind: Secret, name: "${parent.metadata.name}-db"}
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
          data: {keys: "${refs.db.data.map(k, k).sort().join(',')}"}
`

func TestPlanShowsRefs(t *testing.T) {
	e := newPlanEnv(t)
	rulesFile := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rulesFile, fmt.Appendf(nil, planRefsRules, e.ns), 0o644); err != nil {
		t.Fatal(err)
	}
	e.createGadget("g", int64(1))
	const value = "do-not-print-me"

	out, code := e.plan(rulesFile)
	missing := fmt.Sprintf("  reads refs.db: Secret %s/g-db (missing: what reads it waits)\n  . config waits for refs.db", e.ns)
	if code != 0 || !strings.Contains(out, missing) {
		t.Errorf("plan with the Secret missing: exit %d, want 0 and the lines\n%s\ngot:\n%s", code, missing, out)
	}

	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "g-db", "namespace": e.ns},
		"stringData": map[string]any{"password": value, "user": value},
	}}
	if _, err := testenv.Dynamic(t).Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(e.ns).Create(t.Context(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, code = e.plan(rulesFile)
	found := fmt.Sprintf("  reads refs.db: Secret %s/g-db (found)\n  + ConfigMap %s/g (child config)", e.ns, e.ns)
	if code != 2 || !strings.Contains(out, found) || !strings.Contains(out, `+ data.keys: "password,user"`) {
		t.Errorf("plan with the Secret: exit %d, want 2 and the lines\n%s\n  + data.keys: \"password,user\"\ngot:\n%s", code, found, out)
	}
	jsonOut, _ := e.plan(rulesFile, "-o", "json")
	if !strings.Contains(jsonOut, `"refs"`) {
		t.Errorf("plan -o json has no refs:\n%s", jsonOut)
	}
	for _, o := range []string{out, jsonOut} {
		if strings.Contains(o, value) {
			t.Errorf("plan printed the Secret's value:\n%s", o)
		}
	}
}
