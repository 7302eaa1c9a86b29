package informers

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/s2"
	"github.com/kubecel/kubecel/rules/contract"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// testdata/{configmap,deployment,service}.json are kube-apiserver v1.36.3's responses to
// applies of the benchmark rule's children (cmd/bench/testdata/rules.yaml).
var cachedSamples = []string{"configmap", "deployment", "service"}

func loadSample(t testing.TB, name string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestCachedObjectRoundTrip(t *testing.T) {
	for _, name := range cachedSamples {
		t.Run(name, func(t *testing.T) {
			in := loadSample(t, name)
			in.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "X", Name: "p", UID: "u"}})
			now := metav1.Now()
			in.SetDeletionTimestamp(&now)
			in.SetFinalizers([]string{"example.com/f"})
			want := in.DeepCopy()

			got, err := (&Set{prove: acceptAll}).toCache(in)
			if err != nil {
				t.Fatal(err)
			}
			c := got.(*Object)
			out, err := c.Decode()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Object, out.Object); diff != "" {
				t.Errorf("decode(toCache(obj)) (-want +got):\n%s", diff)
			}
			// What handlers, indexes and pruning read without decoding, and what client-go's
			// indexer sees.
			acc, err := meta.Accessor(c)
			if err != nil {
				t.Fatal(err)
			}
			gotMeta := metaFields{c.GetName(), c.GetNamespace(), string(c.GetUID()), c.GetResourceVersion(), c.GetDeletionTimestamp() != nil,
				acc.GetLabels(), acc.GetAnnotations(), c.GroupVersionKind().String()}
			wantLabels := map[string]string{}
			for _, k := range []string{contract.LabelRule, contract.LabelChild, contract.LabelParentUID} {
				wantLabels[k] = want.GetLabels()[k]
			}
			wantMeta := metaFields{want.GetName(), want.GetNamespace(), string(want.GetUID()), want.GetResourceVersion(), true,
				wantLabels, map[string]string{contract.AnnotationParent: want.GetAnnotations()[contract.AnnotationParent]}, want.GroupVersionKind().String()}
			if diff := cmp.Diff(wantMeta, gotMeta); diff != "" {
				t.Errorf("typed metadata (-want +got):\n%s", diff)
			}
			if key, err := cache.MetaNamespaceKeyFunc(c); err != nil || key != want.GetNamespace()+"/"+want.GetName() {
				t.Errorf("informer key = %q, %v", key, err)
			}
			gotLabels := []string{c.Rule(), c.Child(), c.ParentUID(), c.Parent()}
			wantValues := []string{wantLabels[contract.LabelRule], wantLabels[contract.LabelChild], wantLabels[contract.LabelParentUID], want.GetAnnotations()[contract.AnnotationParent]}
			if diff := cmp.Diff(wantValues, gotLabels); diff != "" || c.Rule() != "bench" || !strings.HasSuffix(c.Parent(), "/a") {
				t.Errorf("Rule, Child, ParentUID, Parent (-want +got):\n%s(want rule bench of parent a)", diff)
			}

			// A decoded object is the caller's: changing it leaves the cache alone.
			out.SetLabels(map[string]string{"changed": "yes"})
			again, err := c.Decode()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.GetLabels(), again.GetLabels()); diff != "" {
				t.Errorf("decode after changing a decoded copy (-want +got):\n%s", diff)
			}
			cp := c.DeepCopyObject().(*Object)
			if diff := cmp.Diff(c, cp, cmp.AllowUnexported(Object{}), cmp.Comparer(func(a, b *s2.Dict) bool { return a == b })); diff != "" {
				t.Errorf("DeepCopyObject (-orig +copy):\n%s", diff)
			}
			if cp.deletionTimestamp == c.deletionTimestamp {
				t.Error("DeepCopyObject shares the deletion timestamp")
			}
		})
	}
}

// acceptAll takes every object's kubecel labels for proven.
func acceptAll(*unstructured.Unstructured) bool { return true }

// TestUnprovenObjectIsNoChild checks that an object whose proof the Prover rejects is
// cached without kubecel's labels and annotations: nothing indexes it, requeues a parent
// for it or counts it as a child, whatever labels it carries.
func TestUnprovenObjectIsNoChild(t *testing.T) {
	for _, name := range cachedSamples {
		t.Run(name, func(t *testing.T) {
			in := loadSample(t, name)
			want := in.DeepCopy()
			var asked *unstructured.Unstructured
			c, err := NewObject(in, func(u *unstructured.Unstructured) bool { asked = u; return false })
			if err != nil {
				t.Fatal(err)
			}
			if asked == nil {
				t.Fatal("the prover was not asked about an object with kubecel's labels")
			}
			got := []string{c.Rule(), c.Child(), c.ParentUID(), c.Parent(), c.Origin()}
			if diff := cmp.Diff([]string{"", "", "", "", ""}, got); diff != "" {
				t.Errorf("Rule, Child, ParentUID, Parent, Origin of an unproven object (-want +got):\n%s", diff)
			}
			acc, err := meta.Accessor(c)
			if err != nil {
				t.Fatal(err)
			}
			if len(acc.GetLabels()) != 0 || len(acc.GetAnnotations()) != 0 {
				t.Errorf("metadata of an unproven object = %v, %v; want no kubecel labels or annotations", acc.GetLabels(), acc.GetAnnotations())
			}
			out, err := c.Decode()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Object, out.Object); diff != "" {
				t.Errorf("the object itself is cached as it is (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCachedObjectSizes(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB: about the API server's limit
	tests := []struct {
		name string
		obj  map[string]any
	}{
		{"tiny, first of its kind", map[string]any{"apiVersion": "x/v1", "kind": "T"}},
		{"tiny after it", map[string]any{"apiVersion": "x/v1", "kind": "T", "metadata": map[string]any{"name": "b"}}},
		{"1 MiB of data", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "big"}, "data": map[string]any{"d": big}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := kruntime.DeepCopyJSON(tt.obj)
			c, err := NewObject(&unstructured.Unstructured{Object: tt.obj}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Decode()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got.Object); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

type metaFields struct {
	Name, Namespace, UID, ResourceVersion string
	Deleting                              bool
	Labels, Annotations                   map[string]string
	GVK                                   string
}

func TestInternTable(t *testing.T) {
	tab := newInternTable(3)
	first := tab.intern(strconv.Itoa(100))
	if got := tab.intern(strconv.Itoa(100)); unsafe.StringData(got) != unsafe.StringData(first) {
		t.Error("equal strings are not shared")
	}
	for i := range 10 {
		if got := tab.intern(strconv.Itoa(i)); got != strconv.Itoa(i) {
			t.Errorf("intern(%d) = %q", i, got)
		}
	}
	if n := tab.count.Load(); n != 3 {
		t.Errorf("table holds %d strings, want its cap 3", n)
	}
	if got := tab.intern(strconv.Itoa(100)); unsafe.StringData(got) != unsafe.StringData(first) {
		t.Error("a string interned before the cap is no longer shared")
	}
}

// BenchmarkCachedObject reports, per sample, the heap an object holds in the cache
// (cached-B/obj) against the same object decoded (decoded-B/obj), and what a decode costs
// (ns/op). The objects differ from each other as a rule's children do: in name, UID,
// parent and resource version.
func BenchmarkCachedObject(b *testing.B) {
	for _, name := range cachedSamples {
		b.Run(name, func(b *testing.B) {
			sample := loadSample(b, name)
			variant := func(i int) *unstructured.Unstructured {
				u := sample.DeepCopy()
				u.SetName(fmt.Sprintf("webapp-%05d", i))
				u.SetUID(types.UID(fmt.Sprintf("%08x-1b2a-4c55-9d7e-%012x", i*7919, i*104729)))
				u.SetResourceVersion(strconv.Itoa(100000 + i*3))
				labels := u.GetLabels()
				labels[contract.LabelParentUID] = fmt.Sprintf("%08x-7b6c-4d8e-8f0a-%012x", i*31, i*7)
				u.SetLabels(labels)
				return u
			}
			const n = 2000
			objs := make([]*unstructured.Unstructured, n)
			for i := range objs {
				objs[i] = variant(i)
			}
			raws := make([][]byte, n)
			for i, u := range objs {
				raw, err := u.MarshalJSON()
				if err != nil {
					b.Fatal(err)
				}
				raws[i] = raw
			}
			i := 0
			decoded := heldPerObject(n, func() any {
				u := &unstructured.Unstructured{}
				_ = u.UnmarshalJSON(raws[i%n])
				i++
				Trim(u)
				return u
			})
			// The kind's dictionary exists before the measurement, as it does in a cache
			// of more than dictAfter objects of a kind: the per-object figure does not
			// depend on how many objects of the kind the process cached before.
			for j := range dictAfter {
				if _, err := NewObject(variant(n+j), nil); err != nil {
					b.Fatal(err)
				}
			}
			cached := heldPerObject(n, func() any {
				u := &unstructured.Unstructured{}
				_ = u.UnmarshalJSON(raws[i%n])
				i++
				o, _ := (&Set{prove: acceptAll}).toCache(u)
				return o
			})
			c, err := NewObject(objs[n/2], acceptAll)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := c.Decode(); err != nil {
					b.Fatal(err)
				}
			}
			// After the loop: ResetTimer would drop metrics reported before it.
			b.ReportMetric(decoded, "decoded-B/obj")
			b.ReportMetric(cached, "cached-B/obj")
			runtime.KeepAlive(raws)
		})
	}
}

// heldPerObject makes n objects and returns the live heap they hold, per object.
func heldPerObject(n int, newObj func() any) float64 {
	keep := make([]any, 0, n)
	before := liveHeap()
	for range n {
		keep = append(keep, newObj())
	}
	after := liveHeap()
	runtime.KeepAlive(keep)
	return float64(int64(after)-int64(before)) / float64(n)
}

func liveHeap() uint64 {
	runtime.GC() // the second cycle frees what the first one's finalizers released
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestDictSampleHoldsNoSecretValue: the compression dictionary of a kind lives as long
// as the process; for Secrets it is made without their values, so a Secret's data does
// not outlive the Secret in memory. Other kinds keep their whole JSON.
func TestDictSampleHoldsNoSecretValue(t *testing.T) {
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "db", "namespace": "ns"},
		"data":       map[string]any{"password": "aHVudGVyMg=="},
		"stringData": map[string]any{"token": "s3cr3t-t0ken"},
	}}
	text, err := json.Marshal(secret.Object)
	if err != nil {
		t.Fatal(err)
	}
	sample := string(dictSample(secret, text))
	for _, value := range []string{"aHVudGVyMg==", "s3cr3t-t0ken"} {
		if strings.Contains(sample, value) {
			t.Errorf("the Secret's dictionary sample holds %q: %s", value, sample)
		}
	}
	for _, key := range []string{`"password"`, `"token"`, `"db"`} {
		if !strings.Contains(sample, key) {
			t.Errorf("the Secret's dictionary sample lost %s: %s", key, sample)
		}
	}
	if secret.Object["data"].(map[string]any)["password"] != "aHVudGVyMg==" {
		t.Error("dictSample changed the object it was given")
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"k": "v"}}}
	cmText, _ := json.Marshal(cm.Object)
	if got := dictSample(cm, cmText); string(got) != string(cmText) {
		t.Errorf("a ConfigMap's sample = %s, want its JSON", got)
	}
}
