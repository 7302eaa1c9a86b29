package watch

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynfake "k8s.io/client-go/dynamic/fake"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// The watches' decisions on a fake client: which events queue which parent, and what
// the rest of the controller is told. The informers run on the fake's list and watch.

var (
	fakeCMs     = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	fakeWidgets = schema.GroupVersionResource{Group: "engine.kubecel.dev", Version: "v1", Resource: "widgets"}
)

// recorded is an Events that records what it is told.
type recorded struct {
	mu sync.Mutex
	// stopped names the rules that do not run.
	stopped map[string]bool
	queued  []Key
	deleted []string
}

func (r *recorded) Enqueue(k Key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queued = append(r.queued, k)
}

func (r *recorded) Running(rule string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.stopped[rule]
}

func (r *recorded) ParentDeleted(k Key, uid types.UID, sure, orphan bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deleted = append(r.deleted, fmt.Sprintf("%s %s sure=%v orphan=%v", k, uid, sure, orphan))
}

func (r *recorded) ChildLeft(*informers.Object, bool) []Key { return nil }
func (r *recorded) ParentChanged(string)                    {}

// take returns the keys queued since the last call.
func (r *recorded) take() []Key {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.queued
	r.queued = nil
	return q
}

type fixedMapper struct{ meta.RESTMapper }

func (fixedMapper) Reset() {}

// fakeWatch is a running rule on a fake client: one ConfigMap child per widget.
type fakeWatch struct {
	client  *dynfake.FakeDynamicClient
	events  *recorded
	written *informers.Written
	st      *Rule
}

// proven takes an object for a proven child when it carries the annotation "proof: ok".
func proven(u *unstructured.Unstructured) bool { return u.GetAnnotations()["proof"] == "ok" }

func startFakeWatch(t *testing.T, selector string) *fakeWatch {
	t.Helper()
	client := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		fakeCMs: "ConfigMapList", fakeWidgets: "WidgetList",
	})
	m := meta.NewDefaultRESTMapper(nil)
	m.AddSpecific(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, fakeCMs, fakeCMs.GroupVersion().WithResource("configmap"), meta.RESTScopeNamespace)
	m.AddSpecific(fakeWidgets.GroupVersion().WithKind("Widget"), fakeWidgets, fakeWidgets.GroupVersion().WithResource("widget"), meta.RESTScopeNamespace)
	rs, err := rules.Load([]byte(`
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: fake
    parent:
      apiVersion: engine.kubecel.dev/v1
      resource: widgets`+selector+`
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata:
            name: ${parent.metadata.name}
`), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	events := &recorded{stopped: map[string]bool{}}
	written := informers.NewWritten(proven)
	w := NewWatcher(informers.NewSet(client, time.Hour, proven), fixedMapper{m}, written, events, false)
	st, err := w.Resolve(rs.Rules[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(st) })
	testenv.Eventually(t, 10*time.Second, func() (bool, string) { return st.Synced(), "caches not synced" })
	return &fakeWatch{client: client, events: events, written: written, st: st}
}

// child is a ConfigMap that claims to be rule fake's child of widget ns/w.
func child(name string, proof string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{
			"name": name, "namespace": "ns", "uid": "uid-" + name,
			"labels": map[string]any{
				contract.LabelManagedBy: contract.ManagedByValue, contract.LabelRule: "fake",
				contract.LabelParentUID: "uid-w", contract.LabelChild: "config",
			},
			"annotations": map[string]any{contract.AnnotationParent: "engine.kubecel.dev/widgets/ns/w", "proof": proof},
		},
	}}
}

// waitQueued waits until key was queued (and returns what else was).
func (f *fakeWatch) waitQueued(t *testing.T, key Key) {
	t.Helper()
	var seen []Key
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		seen = append(seen, f.events.take()...)
		return slices.Contains(seen, key), fmt.Sprintf("queued %v, want %v", seen, key)
	})
}

var parentW = Key{Rule: "fake", Namespace: "ns", Name: "w"}

func TestChildEventsQueueTheirParent(t *testing.T) {
	tests := []struct {
		name    string
		proof   string
		running bool
		want    bool
	}{
		{name: "proven child of a running rule", proof: "ok", running: true, want: true},
		{name: "kubecel's labels without a proof", proof: "forged", running: true, want: false},
		{name: "proven child of a rule that does not run", proof: "ok", running: false, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := startFakeWatch(t, "")
			f.events.stopped["fake"] = !tt.running
			if _, err := f.client.Resource(fakeCMs).Namespace("ns").Create(t.Context(), child("c", tt.proof), createOpts); err != nil {
				t.Fatal(err)
			}
			// A marker event after it, of a rule that runs: once the marker is queued, the
			// child's event has been handled (one informer delivers in order).
			if _, err := f.client.Resource(fakeCMs).Namespace("ns").Create(t.Context(), markerFor("marker"), createOpts); err != nil {
				t.Fatal(err)
			}
			var seen []Key
			testenv.Eventually(t, 10*time.Second, func() (bool, string) {
				seen = append(seen, f.events.take()...)
				return slices.Contains(seen, marker), fmt.Sprintf("queued %v, want the marker's parent", seen)
			})
			if got := slices.Contains(seen, parentW); got != tt.want {
				t.Errorf("parent queued = %v, want %v (queued %v)", got, tt.want, seen)
			}
		})
	}
}

// markerFor is a proven child of widget ns/<parent> under the rule "marker", which runs.
func markerFor(parent string) *unstructured.Unstructured {
	m := child("marker-of-"+parent, "ok")
	m.SetAnnotations(map[string]string{contract.AnnotationParent: "engine.kubecel.dev/widgets/ns/" + parent, "proof": "ok"})
	labels := m.GetLabels()
	labels[contract.LabelRule] = "marker"
	m.SetLabels(labels)
	return m
}

var marker = Key{Rule: "marker", Namespace: "ns", Name: "marker"}

func TestEchoOfOurWriteQueuesNothing(t *testing.T) {
	f := startFakeWatch(t, "")
	cms := f.client.Resource(fakeCMs).Namespace("ns")
	created, err := cms.Create(t.Context(), child("c", "ok"), createOpts)
	if err != nil {
		t.Fatal(err)
	}
	f.waitQueued(t, parentW)

	// Our write: announced, sent, settled with the response the informer then echoes.
	ours := created.DeepCopy()
	ours.Object["data"] = map[string]any{"a": "1"}
	ours.SetResourceVersion("7")
	key := KeyOf(ours).String()
	f.written.Sending(key)
	if _, err := cms.Update(t.Context(), ours, updateOpts); err != nil {
		t.Fatal(err)
	}
	f.written.Settle(key, ours)
	if _, err := cms.Create(t.Context(), markerFor("marker"), createOpts); err != nil {
		t.Fatal(err)
	}
	var seen []Key
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		seen = append(seen, f.events.take()...)
		return slices.Contains(seen, marker), fmt.Sprintf("queued %v, want the marker's parent", seen)
	})
	if slices.Contains(seen, parentW) {
		t.Errorf("the echo of our own write queued the parent: %v", seen)
	}

	// Someone else's change to it queues the parent.
	theirs := ours.DeepCopy()
	theirs.Object["data"] = map[string]any{"a": "2"}
	theirs.SetResourceVersion("8")
	if _, err := cms.Update(t.Context(), theirs, updateOpts); err != nil {
		t.Fatal(err)
	}
	f.waitQueued(t, parentW)
}

func TestParentDeletesAreTold(t *testing.T) {
	tests := []struct {
		name     string
		selector string
		want     string
	}{
		{name: "every widget", want: "fake:ns/w uid-w sure=true orphan=false"},
		// Leaving a selector looks like a delete to the informer: not sure.
		{name: "selected widgets", selector: "\n      selector: {matchLabels: {team: a}}", want: "fake:ns/w uid-w sure=false orphan=false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := startFakeWatch(t, tt.selector)
			widgets := f.client.Resource(fakeWidgets).Namespace("ns")
			w := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "engine.kubecel.dev/v1", "kind": "Widget",
				"metadata": map[string]any{"name": "w", "namespace": "ns", "uid": "uid-w", "labels": map[string]any{"team": "a"}},
			}}
			if _, err := widgets.Create(t.Context(), w, createOpts); err != nil {
				t.Fatal(err)
			}
			f.waitQueued(t, parentW)
			if err := widgets.Delete(t.Context(), "w", deleteOpts); err != nil {
				t.Fatal(err)
			}
			f.waitQueued(t, parentW)
			f.events.mu.Lock()
			defer f.events.mu.Unlock()
			if !slices.Equal(f.events.deleted, []string{tt.want}) {
				t.Errorf("told of deletes %q, want %q", f.events.deleted, tt.want)
			}
		})
	}
}

var (
	createOpts = metav1.CreateOptions{}
	updateOpts = metav1.UpdateOptions{}
	deleteOpts = metav1.DeleteOptions{}
)
