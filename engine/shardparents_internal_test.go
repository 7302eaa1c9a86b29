package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// bucketShard is a Shard whose buckets the test sets.
type bucketShard struct {
	mu sync.Mutex
	on map[int]bool
}

func (s *bucketShard) Begin(b int) (func(), bool) { return func() {}, s.Serves(b) }

func (s *bucketShard) Serves(b int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.on[b]
}

func (s *bucketShard) set(buckets []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.on = map[int]bool{}
	for _, b := range buckets {
		s.on[b] = true
	}
}

// bucketsWhere lists the buckets that keep says.
func bucketsWhere(keep func(int) bool) []int {
	var out []int
	for b := range contract.Buckets {
		if keep(b) {
			out = append(out, b)
		}
	}
	return out
}

func even(b int) bool    { return b%2 == 0 }
func odd(b int) bool     { return b%2 == 1 }
func anyBucket(int) bool { return true }

// shardReplica is one sharded controller of the test, with what it saw.
type shardReplica struct {
	name  string
	c     *Controller
	shard *bucketShard
	agent string
	// stubReads counts the reconciles that began with their parent cached as a stub.
	stubReads atomic.Int64
}

// shardParentsWorld is TestShardedParentCaches' namespace, rule and replicas.
type shardParentsWorld struct {
	t        *testing.T
	ns, rule string
	dyn      dynamic.Interface
	parents  []string
	a, b     *shardReplica
}

func (w *shardParentsWorld) start(name string) *shardReplica {
	w.t.Helper()
	r := &shardReplica{name: name, shard: &bucketShard{}, agent: "kubecel-shard-parents-test/" + w.rule + "-" + name}
	cfg := rest.CopyConfig(testenv.Config(w.t))
	cfg.UserAgent = r.agent
	c, err := New(cfg, Options{Shard: r.shard, Identity: testIdentity, Workers: 2})
	if err != nil {
		w.t.Fatal(err)
	}
	r.c = c
	c.testHook = func(key queueKey) {
		if st := c.view.Load().get(key.Rule); st != nil {
			if o, ok := st.CachedParent(key); ok && o.Stub() {
				r.stubReads.Add(1)
			}
		}
	}
	rs, err := rules.Load(fmt.Appendf(nil, panicRules, w.rule, w.ns), rules.Options{EvalTimeout: 5 * time.Second})
	if err != nil {
		w.t.Fatal(err)
	}
	logger := ktesting.NewLogger(w.t, ktesting.NewConfig())
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	c.SetRules(ctx, rs)
	runInBackground(w.t, c, ctx, cancel)
	return r
}

// serve moves r to buckets as a member does: it shrinks what it serves before its
// caches follow, and grows it after, then queues the parents it gained and waits
// until each has been reconciled once.
func (w *shardParentsWorld) serve(r *shardReplica, buckets []int) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.t.Context(), time.Minute)
	defer cancel()
	before := map[int]bool{}
	for b := range contract.Buckets {
		if r.shard.Serves(b) {
			before[b] = true
		}
	}
	now := map[int]bool{}
	var kept []int
	for _, b := range buckets {
		now[b] = true
		if before[b] {
			kept = append(kept, b)
		}
	}
	r.shard.set(kept)
	if err := r.c.WatchBuckets(ctx, buckets); err != nil {
		w.t.Fatal(err)
	}
	r.shard.set(buckets)
	done := make(chan struct{})
	r.c.EnqueueMoved(func(b int) bool { return now[b] && !before[b] }, func() { close(done) })
	select {
	case <-done:
	case <-ctx.Done():
		w.t.Fatalf("replica %s: the parents it gained were not all reconciled within a minute", r.name)
	}
}

// caches checks which parents r's caches hold whole: those of the buckets whole says,
// every other as a stub.
func (w *shardParentsWorld) caches(r *shardReplica, whole func(int) bool) {
	w.t.Helper()
	st := r.c.view.Load().get(w.rule)
	if st == nil {
		w.t.Fatalf("replica %s does not run the rule", r.name)
	}
	testenv.Eventually(w.t, time.Minute, func() (bool, string) {
		for _, p := range w.parents {
			b := contract.Bucket(w.ns, p)
			o, ok := st.CachedParent(queueKey{Rule: w.rule, Namespace: w.ns, Name: p})
			switch {
			case !ok:
				return false, fmt.Sprintf("replica %s does not cache parent %s", r.name, p)
			case o.Stub() == whole(b):
				return false, fmt.Sprintf("replica %s caches parent %s (bucket %d) as a stub: %v, want %v", r.name, p, b, o.Stub(), !whole(b))
			}
		}
		return true, ""
	})
}

func (w *shardParentsWorld) createParent(name, value string) {
	w.t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "engine.kubecel.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": w.ns},
		"spec":     map[string]any{"value": value},
	}}
	if _, err := w.dyn.Resource(widgetGVR).Namespace(w.ns).Create(w.t.Context(), u, metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

func (w *shardParentsWorld) edit(value string) {
	w.t.Helper()
	for _, p := range w.parents {
		patch := fmt.Appendf(nil, `{"spec":{"value":%q}}`, value)
		if _, err := w.dyn.Resource(widgetGVR).Namespace(w.ns).Patch(w.t.Context(), p, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			w.t.Fatal(err)
		}
	}
}

// converged waits until every parent's child holds value and its status shows it.
func (w *shardParentsWorld) converged(value string) {
	w.t.Helper()
	testenv.Eventually(w.t, 2*time.Minute, func() (bool, string) {
		for _, p := range w.parents {
			cm, err := w.dyn.Resource(configMapGVR).Namespace(w.ns).Get(w.t.Context(), p, metav1.GetOptions{})
			if err != nil {
				return false, fmt.Sprintf("child %s: %v", p, err)
			}
			if got, _, _ := unstructured.NestedString(cm.Object, "data", "value"); got != value {
				return false, fmt.Sprintf("child %s holds %q, want %q", p, got, value)
			}
			parent, err := w.dyn.Resource(widgetGVR).Namespace(w.ns).Get(w.t.Context(), p, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			got, _, _ := unstructured.NestedString(parent.Object, "status", "value")
			s, reason, msg := testenv.Condition(parent, contract.ConditionSynced)
			if got != value || s != "True" {
				return false, fmt.Sprintf("parent %s: status value %q, Synced=%s %s %q; want %q, Synced=True", p, got, s, reason, msg, value)
			}
		}
		return true, ""
	})
}

// writes counts the write requests of the replicas in the test's namespace.
func (w *shardParentsWorld) writes(rs ...*shardReplica) int {
	return testenv.Writes(w.t, func(e controlplane.AuditEvent) bool {
		for _, r := range rs {
			if e.UserAgent == r.agent && e.ObjectRef.Namespace == w.ns {
				return true
			}
		}
		return false
	})
}

// healthy checks that no reconcile of either replica failed or began from a stub.
func (w *shardParentsWorld) healthy() {
	w.t.Helper()
	for _, r := range []*shardReplica{w.a, w.b} {
		if n := r.stubReads.Load(); n > 0 {
			w.t.Errorf("replica %s: %d reconciles began with their parent cached as a stub", r.name, n)
		}
		var m dto.Metric
		if err := r.c.metrics.Reconciles.WithLabelValues(w.rule, "error").Write(&m); err != nil {
			w.t.Fatal(err)
		}
		if n := m.GetCounter().GetValue(); n > 0 {
			w.t.Errorf("replica %s: %g reconciles failed", r.name, n)
		}
	}
}

// idle waits until both replicas have reconciled at least once more since before and
// have nothing left to do.
func (w *shardParentsWorld) idle() {
	w.t.Helper()
	stable := 0
	testenv.Eventually(w.t, time.Minute, func() (bool, string) {
		if w.a.c.Idle() && w.b.c.Idle() {
			stable++
		} else {
			stable = 0
		}
		return stable >= 10, "replicas busy"
	})
}

// TestShardedParentCaches runs two sharded controllers of one installation against the
// API server: before either serves a bucket their parent caches hold only stubs; once
// one serves the even buckets and the other the odd ones, each caches whole only the
// parents of its own buckets, and every parent converges. When one leaves, the other
// caches every parent whole and the parents that moved converge on an edit; when it
// joins again, the caches split again and the moved parents converge again. At rest
// neither writes. A parent deleted while one replica holds it as a stub is torn down
// by the other, and a new parent of its name converges on the first once it serves the
// bucket. No reconcile of either replica fails or begins from a stub.
func TestShardedParentCaches(t *testing.T) {
	w := &shardParentsWorld{t: t, ns: testenv.Namespace(t), rule: fmt.Sprintf("shardparents-%04x", rand.IntN(1<<16)),
		dyn: dynamic.NewForConfigOrDie(testenv.Config(t))}
	// Eight parents in even buckets and eight in odd ones.
	var nEven, nOdd int
	for i := 0; nEven+nOdd < 16; i++ {
		name := fmt.Sprintf("w%02d", i)
		if b := contract.Bucket(w.ns, name); even(b) && nEven < 8 {
			nEven++
		} else if odd(b) && nOdd < 8 {
			nOdd++
		} else {
			continue
		}
		w.parents = append(w.parents, name)
		w.createParent(name, "1")
	}
	w.a, w.b = w.start("a"), w.start("b")
	none := func(int) bool { return false }
	// Serving no ring yet: stubs alone.
	w.caches(w.a, none)
	w.caches(w.b, none)

	w.serve(w.a, bucketsWhere(even))
	w.serve(w.b, bucketsWhere(odd))
	w.caches(w.a, even)
	w.caches(w.b, odd)
	w.converged("1")

	// b leaves: a takes the odd buckets over.
	w.serve(w.b, nil)
	w.serve(w.a, bucketsWhere(anyBucket))
	w.caches(w.a, anyBucket)
	w.caches(w.b, none)
	left := w.writes(w.b)
	w.edit("2")
	w.converged("2")
	if n := w.writes(w.b); n != left {
		t.Errorf("replica b wrote %d times after it left", n-left)
	}

	// b joins again and takes the odd buckets back.
	w.serve(w.a, bucketsWhere(even))
	w.serve(w.b, bucketsWhere(odd))
	w.caches(w.a, even)
	w.caches(w.b, odd)
	w.edit("3")
	w.converged("3")

	// At rest, a resync of every parent on both writes nothing.
	w.idle()
	rest := w.writes(w.a, w.b)
	before := w.a.c.Reconciles() + w.b.c.Reconciles()
	w.a.c.EnqueueAll()
	w.b.c.EnqueueAll()
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		n := w.a.c.Reconciles() + w.b.c.Reconciles() - before
		return n >= uint64(len(w.parents)), fmt.Sprintf("%d reconciles since the resync, want %d", n, len(w.parents))
	})
	w.idle()
	if n := w.writes(w.a, w.b); n != rest {
		t.Errorf("%d writes at rest", n-rest)
	}

	// A parent of an odd bucket (a stub on a) is deleted: b tears it down, a writes
	// nothing for it and its stub leaves a's cache.
	var gone string
	for _, p := range w.parents {
		if odd(contract.Bucket(w.ns, p)) {
			gone = p
			break
		}
	}
	aWrites := w.writes(w.a)
	if err := w.dyn.Resource(widgetGVR).Namespace(w.ns).Delete(t.Context(), gone, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	st := w.a.c.view.Load().get(w.rule)
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		_, cached := st.CachedParent(queueKey{Rule: w.rule, Namespace: w.ns, Name: gone})
		_, err := w.dyn.Resource(configMapGVR).Namespace(w.ns).Get(t.Context(), gone, metav1.GetOptions{})
		return !cached && apierrors.IsNotFound(err), fmt.Sprintf("parent %s still cached on a: %v; its child: %v", gone, cached, err)
	})
	w.idle()
	if n := w.writes(w.a); n != aWrites {
		t.Errorf("replica a wrote %d times for a parent it held as a stub", n-aWrites)
	}
	// b leaves again; a new parent of the deleted one's name converges on a.
	w.serve(w.b, nil)
	w.serve(w.a, bucketsWhere(anyBucket))
	w.createParent(gone, "3")
	w.converged("3")
	w.healthy()
	if t.Failed() {
		return
	}
	for _, r := range []*shardReplica{w.a, w.b} {
		whole, stubs := r.c.view.Load().get(w.rule).CountParents()
		t.Logf("replica %s caches %d parents whole and %d as stubs", r.name, whole, stubs)
	}
}

var configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
