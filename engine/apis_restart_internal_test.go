package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

// restartAPIRules is a rule that defines its parent's API (group api-<suffix>).
const restartAPIRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: %[1]s
    api:
      group: %[1]s.api.kubecel.dev
      version: v1
      kind: Gizmo
      spec:
        size: integer | default=1
    parent:
      namespaces: [%[2]s]
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
          data: {size: "${string(parent.spec.size)}"}
`

// TestRestartKeepsTheRuleWhenItsAPIIsRefused: a rule restarts (as an undo of a
// completed rollout has it) after someone else changed its CRD, which it now refuses to
// touch. The version that runs keeps running, as a reload's refused API leaves it;
// before, the restart stopped it and its parents were served by nothing.
func TestRestartKeepsTheRuleWhenItsAPIIsRefused(t *testing.T) {
	c, err := New(testenv.Config(t), Options{Identity: testIdentity})
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t)
	rule := fmt.Sprintf("restart-%04x", rand.IntN(1<<16))
	rs, err := rules.Load(fmt.Appendf(nil, restartAPIRules, rule, ns), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.SetRules(ctx, rs)
	runInBackground(t, c, ctx, cancel)
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		return c.view.Load().get(rule) != nil, "the rule does not run"
	})

	// Someone else takes the CRD: no proof of this installation, and a column of theirs.
	crds := testenv.Dynamic(t).Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	name := "gizmos." + rule + ".api.kubecel.dev"
	patch := `[{"op":"remove","path":"/metadata/annotations/kubecel.dev~1proof"},` +
		`{"op":"add","path":"/spec/versions/0/additionalPrinterColumns","value":[{"name":"Theirs","type":"string","jsonPath":".spec.theirs"}]}]`
	if _, err := crds.Patch(t.Context(), name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = crds.Delete(context.Background(), name, metav1.DeleteOptions{}) })

	c.life.restart(ctx, c.view.Load().get(rule))
	if c.view.Load().get(rule) == nil {
		why := ""
		if p := c.view.Load().pending[rule]; p != nil {
			why = p.reason
		}
		t.Fatalf("the rule stopped at the restart (pending: %s)", why)
	}
}
