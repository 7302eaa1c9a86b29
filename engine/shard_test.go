package engine_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// staticShard serves the buckets it is given, and counts the work it let through.
type staticShard struct {
	mu      sync.Mutex
	buckets map[int]bool
	begun   map[int]int
}

func (s *staticShard) Begin(b int) (func(), bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.buckets[b] {
		return nil, false
	}
	s.begun[b]++
	return func() {}, true
}

func (s *staticShard) Serves(b int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buckets[b]
}

func (s *staticShard) serve(buckets ...int) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range buckets {
		s.buckets[b] = true
	}
	var all []int
	for b := range s.buckets {
		all = append(all, b)
	}
	slices.Sort(all)
	return all
}

// otherName is a name in namespace ns whose bucket differs from not's.
func otherName(ns, prefix string, not int) string {
	for i := 0; ; i++ {
		if name := fmt.Sprintf("%s%d", prefix, i); contract.Bucket(ns, name) != not {
			return name
		}
	}
}

// TestShardedController runs a controller that serves one bucket: only the parent of
// that bucket gets children, a ref still reads an object kubecel made for a parent of
// another bucket (the children's informers hold only the served buckets, the refs'
// everything), and serving a second bucket brings its parent in.
func TestShardedController(t *testing.T) {
	shard := &staticShard{buckets: map[int]bool{}, begun: map[int]int{}}
	f := startControllerWith(t, refRules, rules.Options{}, engine.Options{Workers: 2, Shard: shard})
	mine := contract.Bucket(f.ns, "mine")
	other := otherName(f.ns, "other", mine)
	otherBucket := contract.Bucket(f.ns, other)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := f.ctrl.WatchBuckets(ctx, shard.serve(mine)); err != nil {
		t.Fatal(err)
	}

	// An object kubecel made for a parent of another bucket (as another replica would).
	f.create(configMaps, refConfigMap(f.ns, "foreign", map[string]any{
		contract.LabelManagedBy: contract.ManagedByValue, contract.LabelRule: "elsewhere",
		contract.LabelParentUID: "0000", contract.LabelChild: "c", contract.LabelBucket: contract.BucketLabel(otherBucket),
	}, map[string]any{"value": "from-another-bucket"}))
	f.create(configMaps, refConfigMap(f.ns, "s", nil, map[string]any{"value": "1"}))
	f.create(widgets, widget(f.ns, "mine", map[string]any{"settings": "foreign"}))
	f.create(widgets, widget(f.ns, other, map[string]any{"settings": "s"}))
	f.waitData("mine-out", "value", "from-another-bucket")
	f.waitIdle()
	if got := f.childNames("configmaps", "out"); !slices.Equal(got, []string{"mine-out"}) {
		t.Errorf("children %v, want only mine-out: %s is in bucket %d, which the controller does not serve", got, other, otherBucket)
	}

	// A sync that fails (here: its context is over) keeps the old informers, and the
	// same buckets asked again are then watched.
	over, stop := context.WithCancel(ctx)
	stop()
	if err := f.ctrl.WatchBuckets(over, shard.serve(otherBucket)); err == nil {
		t.Error("WatchBuckets with an ended context succeeded")
	}
	if err := f.ctrl.WatchBuckets(ctx, shard.serve(otherBucket)); err != nil {
		t.Fatal(err)
	}
	moved := make(chan struct{})
	f.ctrl.EnqueueMoved(func(b int) bool { return b == otherBucket }, func() { close(moved) })
	f.waitData(other+"-out", "value", "1")
	select {
	case <-moved:
	case <-time.After(time.Minute):
		t.Error("EnqueueMoved never reported the moved parent reconciled")
	}
	// Once the children's events have come back, the parent is in sync: its child
	// caches hold them (a cache without them would take them for missing, and
	// creating them again fails with ChildExists).
	f.patchData("s", `{"value":"2"}`)
	f.waitData(other+"-out", "value", "2")
	f.waitIdle()
	f.waitFor(widgets, f.ns, other, func(o *unstructured.Unstructured) (bool, string) {
		s, r, m := testenv.Condition(o, contract.ConditionSynced)
		return s == "True", fmt.Sprintf("Synced=%s %s %q", s, r, m)
	})
}

// peerRules have each widget read another widget, of any bucket, through a ref.
const peerRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: {{.Rule}}
    parent:
      apiVersion: engine.kubecel.dev/v1
      resource: widgets
      namespaces: [{{.NS}}]
    refs:
      - {id: peer, apiVersion: engine.kubecel.dev/v1, kind: Widget, name: "${parent.spec.peer}", optional: true}
    children:
      - id: peer
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-peer"}
          data:
            value: "${refs.?peer.spec.value.orValue('none')}"
`

// TestShardedRefReadsAParentOfAnotherBucket: a sharded controller caches the parents of
// the buckets it does not serve as stubs, yet a ref that reads such a parent reads it
// whole (refs have informers of their own), and follows its changes.
func TestShardedRefReadsAParentOfAnotherBucket(t *testing.T) {
	shard := &staticShard{buckets: map[int]bool{}, begun: map[int]int{}}
	f := startControllerWith(t, peerRules, rules.Options{}, engine.Options{Workers: 2, Shard: shard})
	mine := contract.Bucket(f.ns, "mine")
	other := otherName(f.ns, "other", mine)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := f.ctrl.WatchBuckets(ctx, shard.serve(mine)); err != nil {
		t.Fatal(err)
	}
	f.create(widgets, widget(f.ns, other, map[string]any{"value": "v1"}))
	f.create(widgets, widget(f.ns, "mine", map[string]any{"peer": other}))
	f.waitData("mine-peer", "value", "v1")
	f.patchSpec(widgets, f.ns, other, `{"value":"v2"}`)
	f.waitData("mine-peer", "value", "v2")
	f.waitIdle()
	if got := f.childNames("configmaps", "peer"); !slices.Equal(got, []string{"mine-peer"}) {
		t.Errorf("children %v, want only mine-peer: %s is in bucket %d, which the controller does not serve", got, other, contract.Bucket(f.ns, other))
	}
}
