package watch

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// refsRules makes ConfigMaps for Services and reads ConfigMaps by name: kubecel's own
// objects of the kind are both children and refs.
const refsRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: copies
    parent:
      apiVersion: v1
      resource: services
      namespaces: [%s]
    refs:
      - {id: settings, apiVersion: v1, kind: ConfigMap, name: "${parent.metadata.name}"}
    children:
      - id: out
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-out"}
          data: {value: "${refs.settings.data.value}"}
`

// TestRefsCacheEachObjectOnce: under sharding the child informers hold the buckets the
// replica serves, and a ref of the same kind reads kubecel's objects of the other
// buckets from an informer of those alone, so no object is cached twice, and the ref
// reads kubecel's objects of every bucket and everyone else's.
func TestRefsCacheEachObjectOnce(t *testing.T) {
	ns := testenv.Namespace(t)
	client := testenv.Dynamic(t)
	served := contract.Bucket(ns, "served")
	var other string
	for i := 0; other == ""; i++ {
		if name := fmt.Sprintf("other%d", i); contract.Bucket(ns, name) != served {
			other = name
		}
	}
	create := func(name string, labels map[string]any) {
		cm := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": ns, "labels": labels},
			"data":     map[string]any{"value": name},
		}}
		if _, err := client.Resource(configMaps).Namespace(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ours := func(bucket int) map[string]any {
		return map[string]any{contract.LabelManagedBy: contract.ManagedByValue, contract.LabelBucket: contract.BucketLabel(bucket)}
	}
	create("served", ours(served))
	create(other, ours(contract.Bucket(ns, other)))
	create("unbucketed", map[string]any{contract.LabelManagedBy: contract.ManagedByValue})
	create("theirs", nil)

	disco, err := discovery.NewDiscoveryClientForConfig(testenv.Config(t))
	if err != nil {
		t.Fatal(err)
	}
	trust := func(*unstructured.Unstructured) bool { return true }
	set := informers.NewSet(client, time.Minute, trust)
	w := NewWatcher(set, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco)), informers.NewWritten(trust), quiet{}, true)
	rb, err := w.Rebucket(t.Context(), []int{served})
	if err != nil {
		t.Fatal(err)
	}
	rb.Finish(true)
	rs, err := rules.Load(fmt.Appendf(nil, refsRules, ns), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := w.Resolve(rs.Rules[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(st)
	testenv.Eventually(t, 30*time.Second, func() (bool, string) { return st.Synced(), "the rule's caches have not synced" })

	check := func(when string) {
		t.Helper()
		copies := set.Copies(configMaps)
		for _, name := range []string{"served", other, "unbucketed", "theirs"} {
			if n := copies[ns+"/"+name]; n != 1 {
				t.Errorf("%s: ConfigMap %s is cached %d times, want once", when, name, n)
			}
			got, ok, err := st.Refs().Get(t.Context(), configMaps.GroupVersion().WithKind("ConfigMap"), ns, name)
			if err != nil || !ok || got["data"].(map[string]any)["value"] != name {
				t.Errorf("%s: ref Get(%s) = %v, %t, %v; want the object", when, name, got, ok, err)
			}
		}
	}
	check("serving one bucket")

	// The ring changes: the replica serves the other object's bucket too.
	rb, err = w.Rebucket(t.Context(), []int{served, contract.Bucket(ns, other)})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() (bool, string) { return rb.Synced(), "the new informers have not synced" })
	rb.Finish(true)
	check("serving two buckets")
	if got := st.Children[schema.GroupKind{Kind: "ConfigMap"}].Selector(); !strings.HasSuffix(got, bucketSelector([]int{served, contract.Bucket(ns, other)})) {
		t.Errorf("child informer selects %q after the ring change", got)
	}
}

// quiet takes the watches' events and does nothing with them.
type quiet struct{}

func (quiet) Enqueue(Key)                              {}
func (quiet) Running(string) bool                      { return true }
func (quiet) ParentDeleted(Key, types.UID, bool, bool) {}
func (quiet) ChildLeft(*informers.Object, bool) []Key  { return nil }
func (quiet) ParentChanged(string)                     {}
