package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// manyRule is one of the rules of TestManyRulesStartAtOnce: it selects the widget
// labelled with its index and makes one ConfigMap for it, whose value it reports.
const manyRule = `
  - name: %[1]s-%02[2]d
    parent:
      apiVersion: engine.kubecel.dev/v1
      resource: widgets
      namespaces: [%[3]s]
      selector: {matchLabels: {many: "%02[2]d"}}
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-config"}
          data: {value: "${parent.spec.value}%[4]s"}
    status:
      fields:
        value: ${children.config.data.value}
`

// TestManyRulesStartAtOnce: rules loaded together start together (with the race
// detector, their starts share the watcher, the discovery cache and the access
// reviews): every one of them runs, and every parent converges. They need the same
// permissions, which are asked once (one rules review per namespace, whose rules, those
// of the control plane's admin, cover them all: no access review), and their revisions
// are read with one list
// (listAllFrom lowered below their number); a reload that edits one rule asks that
// rule's permissions again and lists that rule's revisions, and no other rule's. A
// controller started again on the same rules reads their revisions with one list and
// writes none.
func TestManyRulesStartAtOnce(t *testing.T) {
	const n = 30
	t.Cleanup(engine.SetListAllFrom(n / 2)) // registered first, so run after the controllers stop
	ns := testenv.Namespace(t)
	prefix := fmt.Sprintf("many-%04x", rand.IntN(1<<16))
	load := func(edited int) *rules.RuleSet {
		t.Helper()
		text := "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n"
		for i := range n {
			suffix := ""
			if i == edited {
				suffix = "-edited"
			}
			text += fmt.Sprintf(manyRule, prefix, i, ns, suffix)
		}
		rs, err := rules.Load([]byte(text), rules.Options{EvalTimeout: testEvalTimeout})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	rs := load(-1)
	// What one rule needs is what each needs: the same kinds in the same namespaces. The
	// test's controller may do everything (the control plane's admin), so the rules of
	// each namespace are asked once, and no single permission.
	namespaces := map[string]bool{}
	for _, a := range rs.Rules[0].Access(true, []schema.GroupVersionResource{configMaps}) {
		namespaces[a.Namespace] = true
	}
	perRule := len(namespaces)

	widgetsClient := testenv.Dynamic(t).Resource(widgets).Namespace(ns)
	for i := range n {
		w := &unstructured.Unstructured{Object: widget(ns, fmt.Sprintf("w%02d", i), map[string]any{"value": fmt.Sprint(i)})}
		w.SetLabels(map[string]string{"many": fmt.Sprintf("%02d", i)})
		if _, err := widgetsClient.Create(t.Context(), w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var reviews, accessReviews, revisionLists, revisionWrites atomic.Int64
	cfg := rest.CopyConfig(testenv.Config(t))
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			switch {
			case req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/selfsubjectrulesreviews"):
				reviews.Add(1)
			case req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/selfsubjectaccessreviews"):
				accessReviews.Add(1)
			case strings.HasSuffix(req.URL.Path, "/controllerrevisions") && req.Method == http.MethodGet && req.URL.Query().Get("watch") != "true":
				revisionLists.Add(1)
			case strings.Contains(req.URL.Path, "/controllerrevisions") && req.Method != http.MethodGet:
				revisionWrites.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	identity := testenv.Identity(t)
	start := func() (*engine.Controller, *prometheus.Registry, func()) {
		t.Helper()
		reg := prometheus.NewRegistry()
		ctrl, err := engine.New(cfg, engine.Options{Identity: identity, Workers: 4, Registry: reg, RevisionNamespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		ctrl.SetRules(ctx, rs)
		var wg sync.WaitGroup
		wg.Go(func() { _ = ctrl.Run(ctx) })
		stop := sync.OnceFunc(func() { cancel(); wg.Wait() })
		t.Cleanup(stop)
		return ctrl, reg, stop
	}
	ctrl, reg, stop := start()
	ctx := t.Context()
	if got := revisionLists.Load(); got != 1 {
		t.Errorf("revision lists sent by the start of %d rules = %d, want 1", n, got)
	}
	if got := revisionWrites.Load(); got != 0 {
		t.Errorf("revision writes of the first start of %d rules = %d, want 0: first revisions wait for the parents", n, got)
	}

	if ok, pending := ctrl.Ready(); len(pending) > 0 {
		t.Fatalf("rules waiting after the start (ready %v): %v", ok, pending)
	}
	if got := gaugeValue(t, reg, "kubecel_active_rules"); got != n {
		t.Errorf("kubecel_active_rules = %v, want %d", got, n)
	}
	if got := reviews.Load(); got != int64(perRule) {
		t.Errorf("rules reviews sent by the start of %d rules = %d, want %d: each namespace once", n, got, perRule)
	}
	converged := func(i int, value string) {
		t.Helper()
		testenv.Eventually(t, 120*time.Second, func() (bool, string) {
			w, err := widgetsClient.Get(t.Context(), fmt.Sprintf("w%02d", i), metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			gen, _, _ := unstructured.NestedInt64(w.Object, "status", "observedGeneration")
			ready, _, _ := testenv.Condition(w, contract.ConditionReady)
			synced, _, _ := testenv.Condition(w, contract.ConditionSynced)
			got := nestedString(w, "status", "value")
			return got == value && gen == w.GetGeneration() && ready == "True" && synced == "True",
				fmt.Sprintf("widget w%02d: status %v, want value %q, Ready and Synced at generation %d", i, w.Object["status"], value, w.GetGeneration())
		})
		cm, err := testenv.Kube(t).CoreV1().ConfigMaps(ns).Get(t.Context(), fmt.Sprintf("w%02d-config", i), metav1.GetOptions{})
		if err != nil || cm.Data["value"] != value {
			t.Errorf("child of widget w%02d: %v (data %v), want value %q", i, err, cm.Data, value)
		}
	}
	for i := range n {
		converged(i, fmt.Sprint(i))
	}
	// Once the controller is idle, each rule stores its first revision.
	testenv.Eventually(t, 60*time.Second, func() (bool, string) {
		got := revisionWrites.Load()
		return got == n, fmt.Sprintf("revision writes after the first start of %d rules = %d, want %d: each rule stores its revision", n, got, n)
	})

	// The same rules started again by another controller: their revisions are stored.
	stop()
	lists, writes := revisionLists.Load(), revisionWrites.Load()
	ctrl, reg, _ = start()
	if got := revisionLists.Load() - lists; got != 1 {
		t.Errorf("revision lists sent by a restart of %d rules = %d, want 1", n, got)
	}
	if got := revisionWrites.Load() - writes; got != 0 {
		t.Errorf("revision writes of a restart on the same rules = %d, want 0", got)
	}

	// A reload that edits one rule starts that rule alone.
	const edited = 7
	before, lists := reviews.Load(), revisionLists.Load()
	ctrl.SetRules(ctx, load(edited))
	if got := reviews.Load() - before; got != int64(perRule) {
		t.Errorf("rules reviews sent by a reload that edits one rule = %d, want %d (that rule's)", got, perRule)
	}
	if got := accessReviews.Load(); got != 0 {
		t.Errorf("access reviews sent = %d, want 0: the rules reviews answer every permission", got)
	}
	if got := revisionLists.Load() - lists; got != 1 {
		t.Errorf("revision lists sent by a reload that edits one rule = %d, want 1 (that rule's)", got)
	}
	if got := gaugeValue(t, reg, "kubecel_active_rules"); got != n {
		t.Errorf("kubecel_active_rules after the reload = %v, want %d", got, n)
	}
	converged(edited, fmt.Sprint(edited)+"-edited")
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// gaugeValue is the value of the gauge name (without labels) in reg.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}
