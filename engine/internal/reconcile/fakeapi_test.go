package reconcile

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	dynfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/engine/internal/metrics"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

// The unit tests of the reconciler's decisions run on a fake dynamic client: fakeAPI
// stores objects, answers server-side applies as the API server does for what the
// decisions read (created when the name is free, a conflict for a create-only apply on a
// taken name, our fields recorded in managedFields), and records every request. What the
// server itself does (field ownership between managers, validation, garbage collection)
// is left to the integration tests on the real control plane.

var widgetGVR = schema.GroupVersionResource{Group: "engine.kubecel.dev", Version: "v1", Resource: "widgets"}

// fakeAPI is a dynamic fake client that answers applies and records every request.
type fakeAPI struct {
	*dynfake.FakeDynamicClient
	mu      sync.Mutex
	rv      int
	actions []clienttesting.Action
}

func newFakeAPI(t *testing.T, objects ...*unstructured.Unstructured) *fakeAPI {
	t.Helper()
	f := &fakeAPI{FakeDynamicClient: dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		cmGVR: "ConfigMapList", widgetGVR: "WidgetList",
	})}
	for _, o := range objects {
		if err := f.Tracker().Create(gvrOf(o), f.stamp(o.DeepCopy()), o.GetNamespace()); err != nil {
			t.Fatal(err)
		}
	}
	f.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		f.mu.Lock()
		f.actions = append(f.actions, a)
		f.mu.Unlock()
		return false, nil, nil
	})
	f.PrependReactor("patch", "*", f.apply)
	return f
}

func gvrOf(o *unstructured.Unstructured) schema.GroupVersionResource {
	if o.GetKind() == "Widget" {
		return widgetGVR
	}
	return cmGVR
}

// stamp gives an object the UID and resourceVersion the server would.
func (f *fakeAPI) stamp(o *unstructured.Unstructured) *unstructured.Unstructured {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rv++
	o.SetResourceVersion(strconv.Itoa(f.rv))
	if o.GetUID() == "" {
		o.SetUID(uuid.NewUUID())
	}
	return o
}

// apply answers a server-side apply: the object is created when its name is free (a
// create-only apply on a taken name is a conflict), otherwise the fields sent replace
// the stored ones; the manager's managedFields entry lists what it sent. Applies to the
// status subresource replace the status.
func (f *fakeAPI) apply(a clienttesting.Action) (bool, runtime.Object, error) {
	pa, ok := a.(clienttesting.PatchActionImpl)
	if !ok || pa.GetPatchType() != types.ApplyPatchType {
		return false, nil, nil
	}
	f.mu.Lock()
	f.actions = append(f.actions, a)
	f.mu.Unlock()
	sent := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(pa.GetPatch(), &sent.Object); err != nil {
		return true, nil, err
	}
	gvr, ns, name := pa.GetResource(), pa.GetNamespace(), pa.GetName()
	stored, err := f.Tracker().Get(gvr, ns, name)
	switch {
	case apierrors.IsNotFound(err) && pa.GetSubresource() != "":
		return true, nil, err
	case apierrors.IsNotFound(err):
		obj := sent.DeepCopy()
		obj.SetResourceVersion("")
		setManaged(obj, pa.PatchOptions.FieldManager, "", sent)
		f.stamp(obj)
		if len(pa.PatchOptions.DryRun) > 0 {
			return true, obj, nil
		}
		return true, obj, f.Tracker().Create(gvr, obj, ns)
	case err != nil:
		return true, nil, err
	}
	obj := stored.(*unstructured.Unstructured).DeepCopy()
	if rv := sent.GetResourceVersion(); rv != "" && rv != obj.GetResourceVersion() {
		return true, nil, apierrors.NewConflict(gvr.GroupResource(), name, fmt.Errorf("the object has been modified"))
	}
	if pa.GetSubresource() == "status" {
		obj.Object["status"] = sent.Object["status"]
	} else {
		for k, v := range sent.Object {
			if k != "metadata" && k != "status" {
				obj.Object[k] = v
			}
		}
		obj.SetLabels(merged(obj.GetLabels(), sent.GetLabels()))
		obj.SetAnnotations(merged(obj.GetAnnotations(), sent.GetAnnotations()))
		if refs := sent.GetOwnerReferences(); refs != nil {
			obj.SetOwnerReferences(refs)
		}
		if fin := sent.GetFinalizers(); fin != nil {
			obj.SetFinalizers(fin)
		}
	}
	setManaged(obj, pa.PatchOptions.FieldManager, pa.GetSubresource(), sent)
	f.stamp(obj)
	if len(pa.PatchOptions.DryRun) > 0 {
		return true, obj, nil
	}
	return true, obj, f.Tracker().Update(gvr, obj, ns)
}

func merged(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// setManaged records in obj's managedFields that manager applied the fields of sent (to
// the subresource).
func setManaged(obj *unstructured.Unstructured, manager, subresource string, sent *unstructured.Unstructured) {
	// As the server: the fields that name the object are not listed, and an apply to a
	// subresource owns only its fields.
	fields := map[string]any{}
	for k, v := range sent.Object {
		switch {
		case k == "apiVersion" || k == "kind":
		case subresource != "" && k != subresource:
		case k == "metadata":
			md := maps.Clone(v.(map[string]any))
			for _, f := range []string{"name", "namespace", "uid", "resourceVersion"} {
				delete(md, f)
			}
			if len(md) > 0 {
				fields[k] = md
			}
		default:
			fields[k] = v
		}
	}
	tv, err := typed.DeducedParseableType.FromUnstructured(fields)
	if err != nil {
		panic(err)
	}
	set, err := tv.ToFieldSet()
	if err != nil {
		panic(err)
	}
	raw, err := set.ToJSON()
	if err != nil {
		panic(err)
	}
	entries := slices.DeleteFunc(obj.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool { return e.Manager == manager && e.Subresource == subresource })
	entries = append(entries, metav1.ManagedFieldsEntry{
		Manager: manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: sent.GetAPIVersion(),
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(raw)), Subresource: subresource,
	})
	obj.SetManagedFields(entries)
}

// writes returns the requests that change something (or would, in a dry run) sent since
// the last call, and forgets them.
func (f *fakeAPI) writes() []clienttesting.Action {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []clienttesting.Action
	for _, a := range f.actions {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete", "deletecollection":
			out = append(out, a)
		}
	}
	f.actions = nil
	return out
}

// describe names requests for a failure message.
func describe(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		s := a.GetVerb() + " " + a.GetResource().Resource
		if sub := a.GetSubresource(); sub != "" {
			s += "/" + sub
		}
		switch a := a.(type) {
		case clienttesting.PatchActionImpl:
			s += " " + a.GetName()
		case clienttesting.DeleteActionImpl:
			s += " " + a.GetName()
		}
		out = append(out, s)
	}
	return out
}

// staticMapper is a RESTMapper of the kinds the fake serves.
type staticMapper struct{ meta.RESTMapper }

func (staticMapper) Reset() {}

func newStaticMapper() staticMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.AddSpecific(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, cmGVR, cmGVR.GroupVersion().WithResource("configmap"), meta.RESTScopeNamespace)
	m.AddSpecific(widgetGVR.GroupVersion().WithKind("Widget"), widgetGVR, widgetGVR.GroupVersion().WithResource("widget"), meta.RESTScopeNamespace)
	return staticMapper{m}
}

// noEvents takes the watches' events and drops them: the tests call Reconcile
// themselves.
type noEvents struct{}

func (noEvents) Enqueue(watch.Key)                              {}
func (noEvents) Running(string) bool                            { return true }
func (noEvents) ParentDeleted(watch.Key, types.UID, bool, bool) {}
func (noEvents) ChildLeft(*informers.Object, bool) []watch.Key  { return nil }
func (noEvents) ParentChanged(string)                           {}

// fakeRig is a reconciler on a fakeAPI with one running rule whose caches list the
// fake's objects.
type fakeRig struct {
	api *fakeAPI
	c   *Reconciler
	st  *watch.Rule
	w   *watch.Watcher
}

// fakeRuleHead is a rule on widgets in namespace ns; the children follow.
const fakeRuleHead = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: fake
    parent:
      apiVersion: engine.kubecel.dev/v1
      resource: widgets
    children:
`

// newFakeRig starts the rule (fakeRuleHead + children) on a fakeAPI holding objects.
func newFakeRig(t *testing.T, children string, dryRun bool, objects ...*unstructured.Unstructured) *fakeRig {
	t.Helper()
	return newFakeRigOn(t, newFakeAPI(t, objects...), children, dryRun)
}

// newFakeRigOn starts the rule (fakeRuleHead + children) on api.
func newFakeRigOn(t *testing.T, api *fakeAPI, children string, dryRun bool) *fakeRig {
	t.Helper()
	return newFakeRigWith(t, api, children, dryRun, rules.Options{})
}

// newFakeRigWith starts the rule (fakeRuleHead + children), loaded with opts, on api.
func newFakeRigWith(t *testing.T, api *fakeAPI, children string, dryRun bool, opts rules.Options) *fakeRig {
	t.Helper()
	rs, err := rules.Load([]byte(fakeRuleHead+children), opts)
	if err != nil {
		t.Fatal(err)
	}
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	prove := func(u *unstructured.Unstructured) bool { return testIdentity.ProvesObject(u) }
	written := informers.NewWritten(prove)
	c := New(Options{Client: api, Identity: testIdentity, Metrics: m, Written: written, DryRun: dryRun,
		Known: func(rule string) bool { return rule == "fake" }})
	w := watch.NewWatcher(informers.NewSet(api, time.Hour, prove), newStaticMapper(), written, noEvents{}, false)
	st, err := w.Resolve(rs.Rules[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(st) })
	testenv.Eventually(t, 10*time.Second, func() (bool, string) { return st.Synced(), "caches not synced" })
	return &fakeRig{api: api, c: c, st: st, w: w}
}

// reconcile reconciles the parent ns/name once and returns its result.
func (r *fakeRig) reconcile(t *testing.T, ns, name string) (Result, error) {
	t.Helper()
	return r.c.Reconcile(t.Context(), r.st, watch.Key{Rule: "fake", Namespace: ns, Name: name})
}

// waitCached waits until the rule's caches show the stored version of every object
// of the fake that has the kind of gvr.
func (r *fakeRig) waitCached(t *testing.T, gvr schema.GroupVersionResource, ns, name string) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		stored, err := r.api.Tracker().Get(gvr, ns, name)
		if err != nil {
			return false, err.Error()
		}
		want := stored.(*unstructured.Unstructured).GetResourceVersion()
		var got string
		if gvr == widgetGVR {
			p, ok, err := r.st.Get(watch.Key{Rule: "fake", Namespace: ns, Name: name})
			if err != nil || !ok {
				return false, fmt.Sprintf("parent not cached (%v)", err)
			}
			got = p.GetResourceVersion()
		} else {
			for _, o := range r.st.OwnedChildren(string(ownerUID(t, r.api, ns))) {
				if o.GetName() == name {
					got = o.GetResourceVersion()
				}
			}
		}
		return got == want, fmt.Sprintf("%s %s/%s cached at %q, stored at %q", gvr.Resource, ns, name, got, want)
	})
}

// ownerUID is the UID of the widget named "w" in ns, the parent of the tests' children.
func ownerUID(t *testing.T, api *fakeAPI, ns string) types.UID {
	t.Helper()
	p, err := api.Tracker().Get(widgetGVR, ns, "w")
	if err != nil {
		t.Fatal(err)
	}
	return p.(*unstructured.Unstructured).GetUID()
}
