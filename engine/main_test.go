package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

func TestMain(m *testing.M) {
	testenv.Main(m, controlplane.Options{ControllerManager: true, AuditWrites: true, CRDs: []*apiextensionsv1.CustomResourceDefinition{
		widgetCRD("widgets", "Widget", apiextensionsv1.NamespaceScoped, true),
		widgetCRD("clusterwidgets", "ClusterWidget", apiextensionsv1.ClusterScoped, true),
		widgetCRD("plainwidgets", "PlainWidget", apiextensionsv1.NamespaceScoped, false),
	}})
}

var (
	widgets        = schema.GroupVersionResource{Group: "engine.kubecel.dev", Version: "v1", Resource: "widgets"}
	clusterWidgets = schema.GroupVersionResource{Group: "engine.kubecel.dev", Version: "v1", Resource: "clusterwidgets"}
	plainWidgets   = schema.GroupVersionResource{Group: "engine.kubecel.dev", Version: "v1", Resource: "plainwidgets"}
	configMaps     = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	services       = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	statefulSets   = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
)

// widgetCRD describes a test CRD with a free-form spec and, optionally, a status
// subresource.
func widgetCRD(plural, kind string, scope apiextensionsv1.ResourceScope, withStatus bool) *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	free := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}
	v := apiextensionsv1.CustomResourceDefinitionVersion{
		Name: "v1", Served: true, Storage: true,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": free, "status": free},
		}},
	}
	if withStatus {
		v.Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".engine.kubecel.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group:    "engine.kubecel.dev",
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List", Singular: strings.ToLower(kind)},
			Scope:    scope,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{v},
		},
	}
}

// widgetRuleHead begins a rules file with one rule for the Widgets of the test's
// namespace; a test appends the rule's children.
const widgetRuleHead = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: {{.Rule}}
    parent:
      apiVersion: engine.kubecel.dev/v1
      resource: widgets
      namespaces: [{{.NS}}]
    children:
`

// fixture is one test's namespace, rule name and running controller.
type fixture struct {
	t     *testing.T
	ns    string
	rule  string
	ctrl  *engine.Controller
	ropts rules.Options // for loadRules
	// origin, when set, is the origin of the rules loadRules loads (rules.Document.Origin):
	// rules read from a team's ConfigMap.
	origin string

	rulesTemplate string
	opts          engine.Options
	stop          func() // stops ctrl
	// agent, when set, is the controller's user agent instead of userAgent's.
	agent string
}

// startController renders rulesTemplate (with .NS and .Rule) and runs a controller with
// it until the test ends. Every test gets its own rule name and namespace, so
// controllers of different tests never act on each other's objects.
func startController(t *testing.T, rulesTemplate string) *fixture {
	t.Helper()
	return startControllerWith(t, rulesTemplate, rules.Options{}, engine.Options{Workers: 4})
}

// testEvalTimeout is the evaluation deadline of the tests' rules unless they set one:
// the default (100 ms) is met by a wide margin on an idle machine, but not always by a
// race-built test on two busy cores, where a deadline missed is a write the test did
// not expect. The tests of the deadline itself set their own.
const testEvalTimeout = 5 * time.Second

// startControllerWith is startController with the given rules and engine options.
func startControllerWith(t *testing.T, rulesTemplate string, ropts rules.Options, opts engine.Options) *fixture {
	t.Helper()
	if ropts.EvalTimeout == 0 {
		ropts.EvalTimeout = testEvalTimeout
	}
	f := &fixture{t: t, ns: testenv.Namespace(t), rule: fmt.Sprintf("r%04x", rand.IntN(1<<16)), ropts: ropts,
		rulesTemplate: rulesTemplate, opts: opts}
	f.run()
	return f
}

// run starts a controller with the fixture's rules until the test ends or stop is
// called.
func (f *fixture) run() {
	f.t.Helper()
	rs := f.loadRules(f.rulesTemplate)
	cfg := rest.CopyConfig(testenv.Config(f.t))
	cfg.UserAgent = f.userAgent()
	if f.opts.Identity == nil {
		f.opts.Identity = testenv.Identity(f.t)
	}
	ctrl, err := engine.New(cfg, f.opts)
	if err != nil {
		f.t.Fatal(err)
	}
	f.ctrl = ctrl
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), ktesting.NewLogger(f.t, ktesting.NewConfig())))
	ctrl.SetRules(ctx, rs)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ctrl.Run(ctx)
	}()
	var once sync.Once
	f.stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	// Registered after the logger's own cleanup, so it runs first: the controller's
	// last lines are logged while the test still runs.
	f.t.Cleanup(f.stop)
}

// userAgent is the fixture's controller's, so that the audit log tells its requests
// from the test's own and from kube-controller-manager's.
func (f *fixture) userAgent() string {
	if f.agent != "" {
		return f.agent
	}
	return "kubecel-engine-test/" + f.rule
}

// restart stops the running controller and starts a new one, with nothing in memory.
func (f *fixture) restart() {
	f.t.Helper()
	f.stop()
	f.run()
}

func (f *fixture) loadRules(rulesTemplate string) *rules.RuleSet {
	f.t.Helper()
	data := f.renderRules(rulesTemplate)
	rs, err := rules.Load(data, f.ropts)
	if f.origin != "" {
		rs, err = rules.LoadDocuments([]rules.Document{{Source: f.origin + " key rules.yaml", Origin: f.origin, Data: data}}, f.ropts)
	}
	if err != nil {
		f.t.Fatalf("load rules: %v\n%s", err, data)
	}
	return rs
}

// renderRules fills in a rules template's {{.NS}} and {{.Rule}}.
func (f *fixture) renderRules(rulesTemplate string) []byte {
	f.t.Helper()
	var buf bytes.Buffer
	if err := template.Must(template.New("rules").Parse(rulesTemplate)).Execute(&buf, f); err != nil {
		f.t.Fatal(err)
	}
	return buf.Bytes()
}

// rulesFile writes a rendered rules template to a file in the test's directory.
func (f *fixture) rulesFile(rulesTemplate string) string {
	f.t.Helper()
	path := filepath.Join(f.t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, f.renderRules(rulesTemplate), 0o600); err != nil {
		f.t.Fatal(err)
	}
	return path
}

// NS and Rule are used by the rules templates.
func (f *fixture) NS() string   { return f.ns }
func (f *fixture) Rule() string { return f.rule }

func (f *fixture) create(gvr schema.GroupVersionResource, obj map[string]any) *unstructured.Unstructured {
	f.t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	ns := u.GetNamespace()
	got, err := testenv.Dynamic(f.t).Resource(gvr).Namespace(ns).Create(f.t.Context(), u, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatalf("create %s %s: %v", gvr.Resource, u.GetName(), err)
	}
	return got
}

func (f *fixture) get(gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	return testenv.Dynamic(f.t).Resource(gvr).Namespace(ns).Get(f.t.Context(), name, metav1.GetOptions{})
}

// patchSpec merges spec into the object's spec.
func (f *fixture) patchSpec(gvr schema.GroupVersionResource, ns, name, specJSON string) {
	f.t.Helper()
	patch := []byte(`{"spec":` + specJSON + `}`)
	if _, err := testenv.Dynamic(f.t).Resource(gvr).Namespace(ns).Patch(f.t.Context(), name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		f.t.Fatalf("patch %s %s: %v", gvr.Resource, name, err)
	}
}

// eventually waits (generously) for cond; a wait is not a timing assertion.
func (f *fixture) eventually(cond func() (bool, string)) {
	f.t.Helper()
	testenv.Eventually(f.t, 60*time.Second, cond)
}

// waitExists waits until the object exists and check(obj) holds.
func (f *fixture) waitFor(gvr schema.GroupVersionResource, ns, name string, check func(*unstructured.Unstructured) (bool, string)) *unstructured.Unstructured {
	f.t.Helper()
	var got *unstructured.Unstructured
	f.eventually(func() (bool, string) {
		obj, err := f.get(gvr, ns, name)
		if err != nil {
			return false, fmt.Sprintf("get %s %s/%s: %v", gvr.Resource, ns, name, err)
		}
		got = obj
		if check == nil {
			return true, ""
		}
		return check(obj)
	})
	return got
}

func (f *fixture) waitGone(gvr schema.GroupVersionResource, ns, name string) {
	f.t.Helper()
	f.eventually(func() (bool, string) {
		_, err := f.get(gvr, ns, name)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("%s %s/%s still exists (err %v)", gvr.Resource, ns, name, err)
	})
}

// waitIdle waits until the controller has nothing queued or in progress.
func (f *fixture) waitIdle() {
	f.t.Helper()
	stable := 0
	f.eventually(func() (bool, string) {
		if f.ctrl.Idle() {
			stable++
		} else {
			stable = 0
		}
		return stable >= 10, "controller busy"
	})
}

func widget(ns, name string, spec map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "engine.kubecel.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}
}

func nestedString(obj *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(obj.Object, path...)
	return s
}
