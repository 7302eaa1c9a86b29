package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubecel/kubecel/rules/contract"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// loadRules gives every widget three children in its namespace, owned through owner
// references: a ConfigMap with spec.value, a second ConfigMap copying the first (so it
// waits for it), and a ServiceAccount annotated with the value. The status mirrors the
// value and the copy.
const loadRules = rulesHead + worldParent + `    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
          data: {value: "${string(parent.spec.value)}"}
      - id: copy
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-copy"}
          data: {value: "${children.config.data.value}"}
      - id: account
        template:
          apiVersion: v1
          kind: ServiceAccount
          metadata:
            name: "${parent.metadata.name}"
            annotations: {` + loadAnnotation + `: "${string(parent.spec.value)}"}
    status:
      fields:
        value: "${string(parent.spec.value)}"
        copy: "${children.copy.data.value}"
`

// loadAnnotation carries the value on the ServiceAccount child.
const loadAnnotation = "faults.kubecel.dev/value"

var serviceAccounts = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}

// loadShape is the size of the load scenario.
type loadShape struct {
	parents  int           // widgets created
	clients  int           // parallel clients creating them
	edits    time.Duration // how long random edits run
	rate     int           // edits per second
	sample   time.Duration // metrics sampling interval during the edits
	poll     time.Duration // convergence polling interval (a list of every widget)
	converge time.Duration // bound on each convergence wait
}

// loadSize is the specified load in the long form (about 15 minutes); in `go test ./...`
// a small one that runs the same checks in about 30 seconds. Convergence is polled by
// listing every widget and child, which takes seconds at 10,000 widgets, so the long form
// polls every 10 s and its convergence times are that coarse.
func loadSize() loadShape {
	if *long {
		return loadShape{parents: 10000, clients: 16, edits: 10 * time.Minute, rate: 20,
			sample: 10 * time.Second, poll: 10 * time.Second, converge: 30 * time.Minute}
	}
	return loadShape{parents: 300, clients: 16, edits: 20 * time.Second, rate: 20,
		sample: time.Second, poll: 250 * time.Millisecond, converge: settle}
}

// TestLoad: many widgets with a three-child rule are created at once, then edited at
// random at a steady rate. Everything converges to the last edit; the workqueue drains to
// zero; no reconcile error, CEL error or workqueue retry is counted during the edits; the
// controller's live heap does not grow with the edits (see checkNoLeak). The figures are
// logged.
//
// The namespace is deleted at the end without waiting (see namespace): the namespace
// controller removes the objects by collection while the next tests run.
func TestLoad(t *testing.T) {
	size := loadSize()
	l := &loadWorld{t: t, NS: namespace(t, "load"), Rule: fmt.Sprintf("load-%04x", rand.IntN(1<<16)), client: loadClient(t)}
	ctrl := startKubecelWith(t, cp.Kubeconfig, "--rules", writeRules(t, loadRules, l), "--pprof-addr", "127.0.0.1:0")
	eventually(t, settle, func() (bool, string) {
		code, body, err := ctrl.get("/readyz")
		return err == nil && code == 200, fmt.Sprintf("/readyz %d %q %v", code, body, err)
	})

	// Create every widget, from parallel clients.
	want := make([]int64, size.parents)
	start := time.Now()
	l.createAll(want, size.clients)
	created := time.Since(start)
	converge := eventually(t, size.converge, every(size.poll, func() (bool, string) { return l.converged(want) }))
	took := created + converge
	before := scrape(t, ctrl)
	t.Logf("%d widgets created in %s by %d clients; converged %s after the first create; during convergence: %.0f reconciles, %.0f errors, %.0f CEL errors, %.0f retries; RSS %s, heap goal %s",
		size.parents, created.Round(time.Millisecond), size.clients, took.Round(100*time.Millisecond),
		before.reconciles, before.errors, before.celErrors, before.retries, mb(before.rss), mb(before.heapGoal))

	// Every widget edited once, so that what a first edit adds to the caches is in before
	// the steady edits are measured.
	start = time.Now()
	l.editAll(want, size.clients)
	edited := time.Since(start)
	converge = eventually(t, size.converge, every(size.poll, func() (bool, string) { return l.converged(want) }))
	t.Logf("every widget edited once in %s; converged %s after the first edit", edited.Round(time.Millisecond), (edited + converge).Round(100*time.Millisecond))

	// Random edits at a steady rate, sampling the metrics.
	start = time.Now()
	samples, edits := l.edit(ctrl, size, want)
	spent := time.Since(start)
	t.Logf("%d edits in %s (%.1f/s)", edits, spent.Round(100*time.Millisecond), float64(edits)/spent.Seconds())
	took = eventually(t, size.converge, every(size.poll, func() (bool, string) { return l.converged(want) }))
	t.Logf("converged to the last edits %s after they ended", took.Round(time.Millisecond))

	after := waitDrained(t, ctrl, samples)
	t.Logf("during the edits and convergence: %.0f reconciles, %.0f errors, %.0f CEL errors, %.0f retries",
		after.reconciles-before.reconciles, after.errors-before.errors, after.celErrors-before.celErrors, after.retries-before.retries)
	checkNoErrorGrowth(t, before, after)
	checkNoLeak(t, samples, after)
	if !ctrl.running() {
		t.Error("kubecel exited")
	}
}

// waitDrained waits until the workqueue is empty, logs its depth during the edits and
// returns the metrics then.
func waitDrained(t testing.TB, ctrl *controller, samples []sample) sample {
	t.Helper()
	var after sample
	drained := eventually(t, settle, func() (bool, string) {
		after = scrape(t, ctrl)
		return after.depth == 0, fmt.Sprintf("workqueue depth %.0f", after.depth)
	})
	deepest := samples[0]
	for _, s := range samples {
		if s.depth > deepest.depth {
			deepest = s
		}
	}
	if deepest.depth > 0 {
		t.Logf("workqueue depth: max %.0f during the edits (%s into them); 0 %s after convergence",
			deepest.depth, deepest.at.Round(time.Second), drained.Round(time.Millisecond))
	} else {
		t.Logf("workqueue depth: 0 in every sample during the edits; 0 %s after convergence", drained.Round(time.Millisecond))
	}
	return after
}

// checkNoErrorGrowth fails the test when an error counter moved between the two samples.
func checkNoErrorGrowth(t testing.TB, before, after sample) {
	t.Helper()
	for _, c := range []struct {
		what          string
		before, after float64
	}{
		{`reconcile errors (kubecel_reconcile_total{result="error"})`, before.errors, after.errors},
		{"CEL errors (kubecel_cel_evaluation_errors_total)", before.celErrors, after.celErrors},
		{"workqueue retries (workqueue_retries_total)", before.retries, after.retries},
	} {
		if c.after != c.before {
			t.Errorf("%s grew from %.0f to %.0f during the edits, want no growth", c.what, c.before, c.after)
		}
	}
}

// loadWorld is the load scenario's widgets: in NS, under rule Rule.
type loadWorld struct {
	t      testing.TB
	NS     string
	Rule   string
	client dynamic.Interface
}

// loadClient is a client without the default client-side limit of 5 requests a second.
func loadClient(t testing.TB) dynamic.Interface {
	t.Helper()
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	return dynamic.NewForConfigOrDie(cfg)
}

func loadName(i int) string { return fmt.Sprintf("w%05d", i) }

// createAll creates len(values) widgets, widget i with value i, from n parallel clients.
func (l *loadWorld) createAll(values []int64, n int) {
	l.t.Helper()
	l.each(len(values), n, func(i int) error {
		values[i] = int64(i)
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "faults.kubecel.dev/v1", "kind": "Widget",
			"metadata": map[string]any{"name": loadName(i), "namespace": l.NS},
			"spec":     map[string]any{"value": int64(i)},
		}}
		if _, err := l.client.Resource(widgets).Namespace(l.NS).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create widget %s: %w", loadName(i), err)
		}
		return nil
	})
}

// editAll sets every widget to a random value, from n parallel clients, with the patch
// the steady edits send: after it, every cached widget and child has been written once
// by the editor and holds a value of the edits' range (see leakPerEdit).
func (l *loadWorld) editAll(values []int64, n int) {
	l.t.Helper()
	random := make([]int64, len(values))
	for i := range random {
		random[i] = rand.Int64N(1_000_000)
	}
	l.each(len(values), n, func(i int) error {
		values[i] = random[i]
		patch := fmt.Appendf(nil, `{"spec":{"value":%d}}`, values[i])
		if _, err := l.client.Resource(widgets).Namespace(l.NS).Patch(context.Background(), loadName(i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("patch widget %s: %w", loadName(i), err)
		}
		return nil
	})
}

// each calls do for 0 to count-1 from n parallel clients and fails the test with the
// first error.
func (l *loadWorld) each(count, n int, do func(i int) error) {
	l.t.Helper()
	var next atomic.Int64
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < count; i = int(next.Add(1) - 1) {
				if err := do(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		l.t.Fatal(err)
	}
}

// edit patches a random widget to a random value size.rate times a second for
// size.edits, recording the last value of each widget in want, and samples the
// controller's metrics every size.sample. It returns the samples and the number of edits.
// Edits of one widget go through one sender, in order, so the last value recorded is the
// last one written.
func (l *loadWorld) edit(ctrl *controller, size loadShape, want []int64) ([]sample, int) {
	l.t.Helper()
	const senders = 4
	type edit struct {
		i     int
		value int64
	}
	var (
		sent    atomic.Int64 // edits handed to the senders, read by the sampler
		failed  atomic.Int64
		firstMu sync.Mutex
		first   error
		wg      sync.WaitGroup
		queues  [senders]chan edit
	)
	for s := range queues {
		queues[s] = make(chan edit, size.rate)
		wg.Go(func() {
			for e := range queues[s] {
				patch := fmt.Appendf(nil, `{"spec":{"value":%d}}`, e.value)
				_, err := l.client.Resource(widgets).Namespace(l.NS).Patch(context.Background(), loadName(e.i), types.MergePatchType, patch, metav1.PatchOptions{})
				if err != nil && failed.Add(1) == 1 {
					firstMu.Lock()
					first = fmt.Errorf("patch widget %s: %w", loadName(e.i), err)
					firstMu.Unlock()
				}
			}
		})
	}

	ctx, stop := context.WithCancel(context.Background())
	var samples []sample
	var taken atomic.Int64 // len(samples), read by the edit loop
	began := time.Now()
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(size.sample)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				s, err := ctrl.scrape()
				if err == nil {
					s.liveHeap, err = ctrl.liveHeap()
				}
				if err == nil {
					s.at, s.edits = time.Since(began), sent.Load()
					samples = append(samples, s)
					taken.Add(1)
				}
			}
		}
	}()

	edits := 0
	tick := time.NewTicker(time.Second / time.Duration(size.rate))
	// The edits go on past size.edits until there are enough samples for the leak
	// check (a busy machine answers the heap profile slowly), for at most five times
	// as long.
	end, last := time.Now().Add(size.edits), time.Now().Add(5*size.edits)
	for ; time.Now().Before(end) || taken.Load() < minSamples && time.Now().Before(last); edits++ {
		<-tick.C
		i := rand.IntN(len(want))
		want[i] = rand.Int64N(1_000_000)
		queues[i%senders] <- edit{i: i, value: want[i]}
		sent.Add(1)
	}
	tick.Stop()
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
	stop()
	<-sampled
	if n := failed.Load(); n > 0 {
		l.t.Fatalf("%d of %d edits failed, first: %v", n, edits, first)
	}
	if len(samples) < 3 {
		l.t.Fatalf("only %d metrics samples during the edits, want at least 3", len(samples))
	}
	return samples, edits
}

// converged reports whether every widget has the value in want, a status for its
// generation with that value (directly and through the copy child) and Synced=True, and
// exactly one child per id, carrying the value, and whether nothing else carries the
// rule's label.
func (l *loadWorld) converged(want []int64) (bool, string) {
	ctx := context.Background()
	parents, err := l.list(ctx, widgets, "")
	if err != nil {
		return false, err.Error()
	}
	value := map[string]string{} // UID -> value
	var late []string
	for k := range parents {
		p := &parents[k]
		i, err := strconv.Atoi(strings.TrimPrefix(p.GetName(), "w"))
		if err != nil || i >= len(want) {
			return false, fmt.Sprintf("unexpected widget %s", p.GetName())
		}
		v, _, _ := unstructured.NestedInt64(p.Object, "spec", "value")
		if v != want[i] {
			return false, fmt.Sprintf("widget %s spec.value %d, want %d (an edit was lost)", p.GetName(), v, want[i])
		}
		msg := statusCurrent(p)
		if copied, _, _ := unstructured.NestedString(p.Object, "status", "copy"); msg == "" && copied != strconv.FormatInt(v, 10) {
			msg = fmt.Sprintf("widget %s status.copy %q, spec.value %d", p.GetName(), copied, v)
		}
		if msg != "" {
			late = append(late, msg)
		}
		value[string(p.GetUID())] = strconv.FormatInt(v, 10)
	}
	if len(parents) != len(want) {
		return false, fmt.Sprintf("%d widgets, want %d", len(parents), len(want))
	}
	if len(late) > 0 {
		if *long {
			l.t.Logf("%d of %d widgets not converged", len(late), len(want))
		}
		return false, fmt.Sprintf("%d of %d widgets not converged, first: %s", len(late), len(want), late[0])
	}

	seen := map[string]int{} // UID/child -> objects
	for _, gvr := range []schema.GroupVersionResource{configMaps, serviceAccounts} {
		children, err := l.list(ctx, gvr, contract.LabelRule+"="+l.Rule)
		if err != nil {
			return false, err.Error()
		}
		for _, c := range children {
			uid, id := c.GetLabels()[contract.LabelParentUID], c.GetLabels()[contract.LabelChild]
			v, ok := value[uid]
			if !ok {
				return false, fmt.Sprintf("%s %s left behind by a parent that is gone (uid %s)", gvr.Resource, c.GetName(), uid)
			}
			got, _, _ := unstructured.NestedString(c.Object, "data", "value")
			if id == "account" {
				got = c.GetAnnotations()[loadAnnotation]
			}
			if got != v {
				return false, fmt.Sprintf("%s %s (child %q) value %q, want %s", gvr.Resource, c.GetName(), id, got, v)
			}
			seen[uid+"/"+id]++
		}
	}
	for uid := range value {
		for _, id := range []string{"config", "copy", "account"} {
			if n := seen[uid+"/"+id]; n != 1 {
				return false, fmt.Sprintf("widget with uid %s has %d %q children, want 1", uid, n, id)
			}
		}
	}
	return true, ""
}

// list reads every object of gvr in the namespace, a page at a time.
func (l *loadWorld) list(ctx context.Context, gvr schema.GroupVersionResource, selector string) ([]unstructured.Unstructured, error) {
	var items []unstructured.Unstructured
	opts := metav1.ListOptions{LabelSelector: selector, Limit: 1000}
	for {
		page, err := l.client.Resource(gvr).Namespace(l.NS).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", gvr.Resource, err)
		}
		items = append(items, page.Items...)
		if opts.Continue = page.GetContinue(); opts.Continue == "" {
			return items, nil
		}
	}
}

// every makes cond wait until d has passed since its previous call: eventually polls
// faster than a list of thousands of widgets should be repeated.
func every(d time.Duration, cond func() (bool, string)) func() (bool, string) {
	var last time.Time
	return func() (bool, string) {
		if wait := d - time.Since(last); wait > 0 {
			time.Sleep(wait)
		}
		last = time.Now()
		return cond()
	}
}
