package examples_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/crdschema"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

var (
	webapps         = schema.GroupVersionResource{Group: "example.kubecel.dev", Version: "v1", Resource: "webapps"}
	databases       = schema.GroupVersionResource{Group: "example.kubecel.dev", Version: "v1", Resource: "databases"}
	namespaces      = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	statefulSets    = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	deployments     = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	services        = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	configMaps      = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	ingresses       = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
	roleBindings    = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
	resourceQuotas  = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}
	limitRanges     = schema.GroupVersionResource{Version: "v1", Resource: "limitranges"}
	networkPolicies = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}
)

// cluster is one integration test's view of the control plane, with the example's rule
// running in an in-process controller until the test ends.
type cluster struct {
	t      *testing.T
	ns     string
	rule   *rules.Rule
	ctrl   *engine.Controller
	client dynamic.Interface
	mapper meta.RESTMapper
}

// runExample starts a controller with the example's rules.yaml, type-checked against
// the cluster's CRDs as `kubecel run` does.
func runExample(t *testing.T, dir string) *cluster {
	t.Helper()
	cfg := testenv.Config(t)
	c := &cluster{t: t, ns: testenv.Namespace(t), client: testenv.Dynamic(t)}
	c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(testenv.Kube(t).Discovery()))
	data, err := os.ReadFile(filepath.Join(dir, "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := crdschema.FromCluster(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rules.Load(data, rules.Options{Schemas: schemas})
	if err != nil {
		t.Fatalf("load %s/rules.yaml against the cluster's schemas:\n%v", dir, err)
	}
	c.rule = rs.Rules[0]
	if c.ctrl, err = engine.New(cfg, engine.Options{Identity: testenv.Identity(t)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig())))
	c.ctrl.SetRules(ctx, rs)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.ctrl.Run(ctx); err != nil {
			t.Errorf("controller: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return c
}

// createParents creates the example's sample parents, namespaced ones in the test's
// namespace, and returns them by name as stored.
func (c *cluster) createParents(dir string) map[string]*unstructured.Unstructured {
	c.t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, obj := range readObjects(c.t, filepath.Join(dir, "parents.yaml")) {
		u := &unstructured.Unstructured{Object: obj}
		if u.GetNamespace() != "" {
			u.SetNamespace(c.ns)
		}
		out[u.GetName()] = c.create(c.rule.Parent.GVR, u)
	}
	return out
}

func (c *cluster) create(gvr schema.GroupVersionResource, u *unstructured.Unstructured) *unstructured.Unstructured {
	c.t.Helper()
	got, err := c.client.Resource(gvr).Namespace(u.GetNamespace()).Create(c.t.Context(), u, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatalf("create %s %s: %v", gvr.Resource, u.GetName(), err)
	}
	return got
}

func (c *cluster) get(gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	return c.client.Resource(gvr).Namespace(ns).Get(c.t.Context(), name, metav1.GetOptions{})
}

// patch merge-patches an object (or its status, with subresource "status").
func (c *cluster) patch(gvr schema.GroupVersionResource, ns, name, patch string, subresource ...string) {
	c.t.Helper()
	if _, err := c.client.Resource(gvr).Namespace(ns).Patch(c.t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, subresource...); err != nil {
		c.t.Fatalf("patch %s %s %s: %v", gvr.Resource, name, subresource, err)
	}
}

// eventually waits for cond. The wait is generous: it tolerates a slow machine and
// asserts nothing about time.
func (c *cluster) eventually(cond func() (bool, string)) {
	c.t.Helper()
	testenv.Eventually(c.t, 60*time.Second, cond)
}

// waitConverged waits until every child that the rule wants for the stored parent
// exists on the cluster and holds every field the rule sets, with nothing left
// waiting, and returns the live children by child id, in the rule's order. It evaluates the rule itself,
// on the live parent and children, so the check follows the rules and the cluster
// rather than restating them.
func (c *cluster) waitConverged(gvr schema.GroupVersionResource, ns, name string) map[string][]*unstructured.Unstructured {
	c.t.Helper()
	var live map[string][]*unstructured.Unstructured
	c.eventually(func() (bool, string) {
		parent, err := c.get(gvr, ns, name)
		if err != nil {
			return false, err.Error()
		}
		res, err := c.rule.EvaluateWithRefs(c.t.Context(), parent.Object, c.children(parent), liveRefs{c})
		if err != nil {
			c.t.Fatalf("evaluate %s: %v", name, err)
		}
		if len(res.Waiting) > 0 {
			return false, fmt.Sprintf("%s: children waiting: %v", name, res.Waiting)
		}
		live = map[string][]*unstructured.Unstructured{}
		for _, d := range res.Children {
			want := &unstructured.Unstructured{Object: d.Object}
			if want.GetNamespace() == "" {
				want.SetNamespace(parent.GetNamespace())
			}
			got, err := c.get(c.resource(want.GroupVersionKind()), want.GetNamespace(), want.GetName())
			if err != nil {
				return false, fmt.Sprintf("%s child %s: %v", name, d.ID, err)
			}
			if at, ok := contains(got.Object, want.Object, ""); !ok {
				return false, fmt.Sprintf("%s child %s %s: %s differs from the rule's output", name, d.ID, want.GetName(), at)
			}
			live[d.ID] = append(live[d.ID], got)
		}
		return true, ""
	})
	return live
}

// children lists the parent's children of every kind the rule makes, by kubecel's
// labels, as the controller's informers would see them.
func (c *cluster) children(parent *unstructured.Unstructured) rules.Observed {
	c.t.Helper()
	observed := rules.Observed{}
	selector := labels.Set{"kubecel.dev/rule": c.rule.Name, "kubecel.dev/parent-uid": string(parent.GetUID())}.String()
	seen := map[schema.GroupVersionKind]bool{}
	for _, ch := range c.rule.Children {
		if seen[ch.GVK] {
			continue
		}
		seen[ch.GVK] = true
		list, err := c.client.Resource(c.resource(ch.GVK)).List(c.t.Context(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			c.t.Fatalf("list %s: %v", ch.GVK.Kind, err)
		}
		for _, item := range list.Items {
			id := item.GetLabels()["kubecel.dev/child"]
			observed[id] = append(observed[id], item.Object)
		}
	}
	return observed
}

// liveRefs reads the objects of a rule's refs from the API server, for the tests' own
// evaluation of what the controller should have made.
type liveRefs struct{ c *cluster }

func (r liveRefs) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (map[string]any, bool, error) {
	got, err := r.c.client.Resource(r.c.resource(gvk)).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return got.Object, true, nil
}

func (r liveRefs) List(ctx context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]map[string]any, error) {
	list, err := r.c.client.Resource(r.c.resource(gvk)).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, len(list.Items))
	for i := range list.Items {
		out[i] = list.Items[i].Object
	}
	return out, nil
}

func (c *cluster) resource(gvk schema.GroupVersionKind) schema.GroupVersionResource {
	c.t.Helper()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		c.t.Fatalf("resource of %s: %v", gvk, err)
	}
	return m.Resource
}

// waitStatus waits until the parent's status satisfies check, and the controller has
// written it for the parent's current generation.
func (c *cluster) waitStatus(gvr schema.GroupVersionResource, ns, name string, check func(status map[string]any) string) *unstructured.Unstructured {
	c.t.Helper()
	var parent *unstructured.Unstructured
	c.eventually(func() (bool, string) {
		var err error
		if parent, err = c.get(gvr, ns, name); err != nil {
			return false, err.Error()
		}
		status, _ := parent.Object["status"].(map[string]any)
		if gen, _, _ := unstructured.NestedInt64(parent.Object, "status", "observedGeneration"); gen != parent.GetGeneration() {
			return false, fmt.Sprintf("%s: status.observedGeneration %d, generation %d", name, gen, parent.GetGeneration())
		}
		if msg := check(status); msg != "" {
			return false, fmt.Sprintf("%s: %s; status: %v", name, msg, status)
		}
		return true, ""
	})
	return parent
}

// waitGone waits until the object no longer exists.
func (c *cluster) waitGone(gvr schema.GroupVersionResource, ns, name string) {
	c.t.Helper()
	c.eventually(func() (bool, string) {
		_, err := c.get(gvr, ns, name)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("%s %s/%s still there (err %v)", gvr.Resource, ns, name, err)
	})
}

// waitIdle waits until the controller has had nothing to do for a while, after which
// what it has not created it will not create.
func (c *cluster) waitIdle() {
	c.t.Helper()
	quiet := 0
	c.eventually(func() (bool, string) {
		if c.ctrl.Idle() {
			quiet++
		} else {
			quiet = 0
		}
		return quiet >= 10, "the controller is still busy"
	})
}

// managedCount counts the objects of a kind in a namespace that carry the rule's label.
func (c *cluster) managedCount(gvr schema.GroupVersionResource, ns string) int {
	c.t.Helper()
	list, err := c.client.Resource(gvr).Namespace(ns).List(c.t.Context(), metav1.ListOptions{LabelSelector: "kubecel.dev/rule=" + c.rule.Name})
	if err != nil {
		c.t.Fatal(err)
	}
	return len(list.Items)
}

// condition returns the status and reason of a condition of a status map.
func condition(status map[string]any, typ string) (string, string) {
	conds, _ := status["conditions"].([]any)
	for _, cond := range conds {
		m, _ := cond.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			return s, r
		}
	}
	return "", ""
}

// readyIs checks the Ready condition and that Synced is True.
func readyIs(want string) func(map[string]any) string {
	return func(status map[string]any) string {
		if s, r := condition(status, contract.ConditionSynced); s != "True" {
			return fmt.Sprintf("Synced is %q (%s)", s, r)
		}
		if s, r := condition(status, contract.ConditionReady); s != want {
			return fmt.Sprintf("Ready is %q (%s), want %s", s, r, want)
		}
		return ""
	}
}

// all combines status checks.
func all(checks ...func(map[string]any) string) func(map[string]any) string {
	return func(status map[string]any) string {
		for _, check := range checks {
			if msg := check(status); msg != "" {
				return msg
			}
		}
		return ""
	}
}

// statusIs checks one status field; a nil want means the field must be absent.
func statusIs(name string, want any) func(map[string]any) string {
	return func(status map[string]any) string {
		got, present := status[name]
		switch {
		case want == nil && present:
			return fmt.Sprintf("status.%s = %v, want it absent", name, got)
		case want != nil && !sameValue(got, want):
			return fmt.Sprintf("status.%s = %v, want %v", name, got, want)
		}
		return ""
	}
}

// contains reports whether got holds every field of want with the same value (lists
// element by element, and of the same length), and otherwise the path of the first
// difference.
func contains(got, want any, at string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return at, false
		}
		for k, v := range w {
			if path, ok := contains(g[k], v, at+"."+k); !ok {
				return path, false
			}
		}
		return "", true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return at, false
		}
		for i := range w {
			if path, ok := contains(g[i], w[i], fmt.Sprintf("%s[%d]", at, i)); !ok {
				return path, false
			}
		}
		return "", true
	}
	if !sameValue(got, want) {
		return fmt.Sprintf("%s (%v, want %v)", at, got, want), false
	}
	return "", true
}

// sameValue compares JSON scalars, numbers by value whatever their Go type.
func sameValue(got, want any) bool {
	if g, ok := number(got); ok {
		w, ok := number(want)
		return ok && g == w
	}
	return reflect.DeepEqual(got, want)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// ownedBy checks that obj has a controller owner reference to parent.
func ownedBy(t *testing.T, obj, parent *unstructured.Unstructured) {
	t.Helper()
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == parent.GetUID() && ref.Controller != nil && *ref.Controller {
			return
		}
	}
	t.Errorf("%s %s: ownerReferences %v, want a controller reference to %s", obj.GetKind(), obj.GetName(), obj.GetOwnerReferences(), parent.GetName())
}

// names returns the sorted names of objects.
func names(objs []*unstructured.Unstructured) string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return strings.Join(sorted(out), ",")
}
