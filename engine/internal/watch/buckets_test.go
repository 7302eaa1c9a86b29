package watch

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

func TestBucketSelector(t *testing.T) {
	all := allBuckets()
	tests := []struct {
		buckets []int
		want    string
		matches []int
	}{
		{nil, "kubecel.dev/bucket in (none)", nil},
		{[]int{3, 17}, "kubecel.dev/bucket in (3,17)", []int{3, 17}},
		{all, "", all},
	}
	for _, tt := range tests {
		got := bucketSelector(tt.buckets)
		if got != tt.want {
			t.Errorf("bucketSelector(%v) = %q, want %q", tt.buckets, got, tt.want)
		}
		sel, err := labels.Parse(got)
		if err != nil {
			t.Fatalf("bucketSelector(%v) = %q: %v", tt.buckets, got, err)
		}
		for b := range contract.Buckets {
			want := false
			for _, m := range tt.matches {
				want = want || m == b
			}
			if sel.Matches(labels.Set{contract.LabelBucket: contract.BucketLabel(b)}) != want {
				t.Errorf("selector %q matches bucket %d: %v, want %v", got, b, !want, want)
			}
		}
	}
}

// TestParentWatchKey checks which parents a rule's parent informer holds whole: under
// sharding those of the served buckets (the informer's Key.Whole), unless the rule
// keeps them all (WholeParents); without sharding, or serving every bucket, all.
func TestParentWatchKey(t *testing.T) {
	rs, err := rules.Load([]byte(`
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: w
    parent: {apiVersion: engine.kubecel.dev/v1, resource: widgets, selector: {matchLabels: {tier: web}}}
    status: {fields: {a: "1"}}
`), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		buckets      []int // nil with sharded false: no sharding
		sharded      bool
		wholeParents bool
		want         string
	}{
		{name: "not sharded", want: ""},
		{name: "sharded, no ring yet", sharded: true, want: "none"},
		{name: "sharded, two buckets", sharded: true, buckets: []int{3, 17}, want: "3,17"},
		{name: "sharded, every bucket", sharded: true, buckets: allBuckets(), want: ""},
		{name: "rollout, no ring yet", sharded: true, wholeParents: true, want: ""},
		{name: "rollout, two buckets", sharded: true, buckets: []int{3, 17}, wholeParents: true, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &Watcher{}
			if tt.sharded {
				w.served = servedValues(tt.buckets)
			}
			st := &Rule{Rule: rs.Rules[0], ParentKind: Kind{GVR: fakeWidgets}, ParentSchema: "7", WholeParents: tt.wholeParents}
			want := informers.Key{GVR: fakeWidgets, Namespace: "ns", Selector: "tier=web", Schema: "7", Whole: tt.want}
			if diff := cmp.Diff(want, w.parentWatchKey(st, "ns")); diff != "" {
				t.Errorf("parentWatchKey (-want +got):\n%s", diff)
			}
		})
	}
}

func allBuckets() []int {
	all := make([]int, contract.Buckets)
	for i := range all {
		all[i] = i
	}
	return all
}

// TestRebucketParents starts a sharded watcher's rule on a fake client, and checks that
// its parent cache holds stubs alone before it serves a bucket, the parent of the bucket
// it then serves whole once the change is finished (the old cache until then), and the
// old cache again after a change that failed. A rule that keeps its parents whole keeps
// its informer.
func TestRebucketParents(t *testing.T) {
	client := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		fakeCMs: "ConfigMapList", fakeWidgets: "WidgetList",
	})
	m := meta.NewDefaultRESTMapper(nil)
	m.AddSpecific(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, fakeCMs, fakeCMs.GroupVersion().WithResource("configmap"), meta.RESTScopeNamespace)
	m.AddSpecific(fakeWidgets.GroupVersion().WithKind("Widget"), fakeWidgets, fakeWidgets.GroupVersion().WithResource("widget"), meta.RESTScopeNamespace)
	names := map[int]string{}
	for i := 0; len(names) < 3; i++ {
		name := fmt.Sprintf("w%d", i)
		if b := contract.Bucket("ns", name); names[b] == "" && (b == 3 || len(names) < 2 && b != 3) {
			names[b] = name
		}
	}
	for _, name := range names {
		w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "engine.kubecel.dev/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": "ns", "uid": "uid-" + name}}}
		if _, err := client.Resource(fakeWidgets).Namespace("ns").Create(t.Context(), w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := rules.Load([]byte(`
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: sharded
    parent: {apiVersion: engine.kubecel.dev/v1, resource: widgets}
    status: {fields: {a: "1"}}
  - name: whole
    parent: {apiVersion: engine.kubecel.dev/v1, resource: widgets}
    status: {fields: {b: "1"}}
`), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := NewWatcher(informers.NewSet(client, time.Hour, proven), fixedMapper{m}, informers.NewWritten(proven), &recorded{stopped: map[string]bool{}}, true)
	var started []*Rule
	for _, r := range rs.Rules {
		st, err := w.Resolve(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		st.WholeParents = r.Name == "whole"
		if err := w.Start(t.Context(), st); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Stop(st) })
		started = append(started, st)
	}
	sharded, whole := started[0], started[1]
	counts := func(st *Rule, wantWhole, wantStubs int) {
		t.Helper()
		testenv.Eventually(t, 10*time.Second, func() (bool, string) {
			w, s := st.CountParents()
			return st.Synced() && w == wantWhole && s == wantStubs,
				fmt.Sprintf("rule %s caches %d parents whole and %d stubs, want %d and %d", st.Name(), w, s, wantWhole, wantStubs)
		})
	}
	counts(sharded, 0, 3)
	counts(whole, 3, 0)
	key := Key{Rule: "sharded", Namespace: "ns", Name: names[3]}
	if _, _, err := sharded.Get(key); !errors.Is(err, informers.ErrStub) {
		t.Errorf("Get of a stub: %v, want ErrStub", err)
	}
	if got, err := sharded.Parents(""); err != nil || len(got) != 0 {
		t.Errorf("Parents with stubs alone: %d, %v; want none", len(got), err)
	}

	// rebucket changes the buckets to buckets, finishing with ok; the rule that
	// shards its parents caches before wholeBefore of them whole.
	rebucket := func(buckets []int, ok bool, wholeBefore int) {
		t.Helper()
		rb, err := w.Rebucket(t.Context(), buckets)
		if err != nil || rb == nil {
			t.Fatalf("Rebucket(%v) = %v, %v", buckets, rb, err)
		}
		if len(rb.parents) != 1 {
			t.Errorf("Rebucket(%v) replaces %d parent informers, want 1 (the rule that keeps its parents whole keeps its own)", buckets, len(rb.parents))
		}
		testenv.Eventually(t, 10*time.Second, func() (bool, string) { return rb.Synced(), "new informers not synced" })
		counts(sharded, wholeBefore, 3-wholeBefore) // the old cache serves until the change is finished
		rb.Finish(ok)
	}
	rebucket([]int{3}, true, 0)
	counts(sharded, 1, 2)
	counts(whole, 3, 0)
	u, found, err := sharded.Get(key)
	if err != nil || !found || u.GetName() != names[3] {
		t.Errorf("Get of the parent of a served bucket: %v, %v, %v", u, found, err)
	}
	rebucket(nil, false, 1)
	counts(sharded, 1, 2)
	rebucket(nil, true, 1)
	counts(sharded, 0, 3)
}
