package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/kubecel/kubecel/rules/contract"
)

// The noisy-neighbour phase: one tenant builds and then deletes a lot of children while
// another makes small changes, on a controller of its own (a fresh process, so its peak
// memory is this phase's). The heavy tenant, namespace noisy-heavy, has 16 parents of
// 1,000 ConfigMaps each (the rule heavy), or the same 16,000 children spread over 50
// namespaces or 1,000 cluster-scoped parents (--noisy-shape, noisyshape.go). The light tenant, namespace noisy-light, has
// parents of the bench's own rule, created and then edited one at a time, each timed
// until its status shows the change (Ready and Synced for its generation, with the
// image). The light tenant's times are taken on the idle controller first, then while
// the heavy tenant builds, then while it is torn down.

const (
	heavyNS       = "noisy-heavy"
	lightNS       = "noisy-light"
	heavyParents  = 16
	heavyChildren = 1000
	// lightIdleOps is how many light parents are created and edited on the idle
	// controller (two timed operations each).
	lightIdleOps = 20
	// lightPace is the least time from the start of one light operation to the next
	// while the heavy tenant works, so that the light tenant's own load on the API
	// server is about the same whichever controller serves it (a controller that
	// served it faster made it send more, and the heavy tenant slower).
	lightPace = 500 * time.Millisecond
)

// noisyRules are the bench's rules with the light tenant's namespace added to the bench
// rule, and the heavy rule of the shape.
func noisyRules(shape noisyShape) ([]byte, error) {
	const one = "namespaces: [bench]"
	if !bytes.Contains(rulesYAML, []byte(one)) {
		return nil, fmt.Errorf("the bench's rules no longer say %q", one)
	}
	out := bytes.Replace(rulesYAML, []byte(one), []byte("namespaces: [bench, "+lightNS+"]"), 1)
	return append(bytes.TrimRight(out, "\n"), shape.rule()...), nil
}

// noisyResult is what the phase measured.
type noisyResult struct {
	shape noisyShape
	// idle, build and teardown are the light tenant's operation times on the idle
	// controller, while the heavy tenant builds, and while it is torn down.
	idle, build, teardown []time.Duration
	heavyBuild            time.Duration // until all the heavy tenant's children exist
	heavyTeardown         time.Duration // from deleting its parents until no child is left
	rssBefore             uint64        // settled, before the heavy tenant starts
	rssPeak, rssAfter     uint64
	yields                float64
}

// noisyPhase runs the noisy-neighbour phase on the bench's control plane.
type noisyPhase struct{ b *bench }

// run runs the phase on a controller of its own and returns its figures.
func (p noisyPhase) run(ctx context.Context) (*noisyResult, error) {
	b := p.b
	b.ctrls.stop()
	b.ctrls = nil
	shape, err := shapeNamed(b.cfg.noisyShape)
	if err != nil {
		return nil, err
	}
	data, err := noisyRules(shape)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(b.cfg.dir, "noisy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	rulesPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rulesPath, data, 0o644); err != nil {
		return nil, err
	}
	tenants := shape.tenants()
	for _, ns := range shape.ownNamespaces() {
		_, err := b.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{tenantLabel: tenants[ns]}}}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	cfg := b.cfg
	cfg.sharding = false
	ctrl, err := startProcess(cfg, "noisy", dir, cfg.runArgs(rulesPath, b.cp.Kubeconfig), [3]int{ports[0], ports[1], ports[2]})
	if err != nil {
		return nil, err
	}
	b.ctrls = fleet{ctrl}
	if err := ctrl.waitReady(ctx); err != nil {
		return nil, fmt.Errorf("noisy controller (log: %s): %w", ctrl.log.Name(), err)
	}
	w, err := startNoisyWatch(ctx, b)
	if err != nil {
		return nil, err
	}
	defer w.stop()
	light := &lightTenant{b: b, w: w}
	res := &noisyResult{shape: shape}

	// One parent first, untimed: the first event after the controller starts its watches
	// came about 2 s late in every run (the API server's new watch), which is not what
	// the light tenant meets later.
	if _, err := light.run(ctx, 0, func(ops int) bool { return ops >= 2 }); err != nil {
		return nil, err
	}
	logf("noisy neighbour: the light tenant alone, %d parents created and edited", lightIdleOps)
	if res.idle, err = light.run(ctx, 0, func(ops int) bool { return ops >= 2*lightIdleOps }); err != nil {
		return nil, err
	}
	logf("noisy neighbour: idle light operations: %s", summary(res.idle))
	res.rssBefore = ctrl.rss().current

	logf("noisy neighbour: the heavy tenant creates %s", shape.label)
	if res.heavyBuild, res.build, err = p.alongside(ctx, w, light, shape.parents, shape.create, shape.total()); err != nil {
		return nil, fmt.Errorf("heavy build: %w", err)
	}
	logf("noisy neighbour: heavy build %s; light operations meanwhile: %s", secs(res.heavyBuild), summary(res.build))

	logf("noisy neighbour: the heavy tenant deletes its %d parents", shape.parents)
	if res.heavyTeardown, res.teardown, err = p.alongside(ctx, w, light, shape.parents, shape.remove, 0); err != nil {
		return nil, fmt.Errorf("heavy teardown: %w", err)
	}
	logf("noisy neighbour: heavy teardown %s; light operations meanwhile: %s", secs(res.heavyTeardown), summary(res.teardown))
	mem := ctrl.rss()
	res.rssPeak, res.rssAfter = mem.peak, mem.current
	for name, times := range map[string][]time.Duration{"idle": res.idle, "build": res.build, "teardown": res.teardown} {
		if err := writeTimes(filepath.Join(dir, "light-"+name+".txt"), times); err != nil {
			logf("noisy neighbour: %v", err)
		}
	}
	b.ctrls.saveMetrics(ctx, "metrics-noisy.txt")
	if res.yields, err = ctrl.metric(ctx, "kubecel_reconcile_yields_total"); err != nil {
		logf("noisy neighbour: %v", err)
	}
	return res, nil
}

// alongside runs heavy (the heavy tenant's writes, one per parent, of parents) and waits
// until the heavy tenant has n children, while the light tenant works, paced; it returns
// the heavy tenant's time and the light tenant's operation times.
func (p noisyPhase) alongside(ctx context.Context, w *noisyWatch, light *lightTenant, parents int, heavy func(context.Context, dynamic.Interface, int) error, n int) (time.Duration, []time.Duration, error) {
	b := p.b
	start := time.Now()
	var took time.Duration
	var finished atomic.Bool
	done := make(chan error, 1)
	go func() {
		err := b.parallel(ctx, parents, heavy)
		if err == nil {
			err = w.waitChildren(ctx, b.cfg.timeout, n)
		}
		took = time.Since(start)
		finished.Store(true)
		done <- err
	}()
	times, err := light.run(ctx, lightPace, func(int) bool { return finished.Load() })
	if herr := <-done; herr != nil {
		return 0, nil, herr
	}
	return took, times, err
}

// lightTenant creates and edits parents one at a time and times each change.
type lightTenant struct {
	b    *bench
	w    *noisyWatch
	next int
}

// run creates a parent, waits until it converged, edits its image, waits again, and
// repeats until stop says so (given the operations done so far; checked between
// operations, and at least one pair is always done), returning each operation's time.
// An operation starts no sooner than pace after the one before it started.
func (l *lightTenant) run(ctx context.Context, pace time.Duration, stop func(ops int) bool) ([]time.Duration, error) {
	var times []time.Duration
	c := l.b.clients[0]
	next := time.Now()
	wait := func() error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(next)):
		}
		next = time.Now().Add(pace)
		return nil
	}
	for len(times) == 0 || !stop(len(times)) {
		if err := wait(); err != nil {
			return nil, err
		}
		p := newParent(lightNS, l.next)
		name := p.GetName()
		l.next++
		start := time.Now()
		if _, err := c.Resource(webapps).Namespace(lightNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		if err := l.w.waitParent(ctx, name, image1); err != nil {
			return nil, err
		}
		times = append(times, time.Since(start))
		if err := wait(); err != nil {
			return nil, err
		}
		patch := []byte(fmt.Sprintf(`{"spec":{"image":%q}}`, image2))
		start = time.Now()
		if _, err := c.Resource(webapps).Namespace(lightNS).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return nil, err
		}
		if err := l.w.waitParent(ctx, name, image2); err != nil {
			return nil, err
		}
		times = append(times, time.Since(start))
	}
	return times, nil
}

// noisyWatch follows the light tenant's parents and the heavy tenant's children (their
// metadata only).
type noisyWatch struct {
	parents, children cache.SharedIndexInformer
	cancel            context.CancelFunc
}

func startNoisyWatch(ctx context.Context, b *bench) (*noisyWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	meta, err := metadata.NewForConfig(b.cp.Config)
	if err != nil {
		cancel()
		return nil, err
	}
	df := dynamicinformer.NewFilteredDynamicSharedInformerFactory(b.clients[0], 0, lightNS, nil)
	// The heavy tenant's children, in whichever namespaces: those of its rule.
	mf := metadatainformer.NewFilteredSharedInformerFactory(meta, 0, metav1.NamespaceAll, func(o *metav1.ListOptions) {
		o.LabelSelector = contract.LabelRule + "=heavy"
	})
	w := &noisyWatch{parents: df.ForResource(webapps).Informer(), children: mf.ForResource(configmaps).Informer(), cancel: cancel}
	df.Start(ctx.Done())
	mf.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), w.parents.HasSynced, w.children.HasSynced) {
		cancel()
		return nil, fmt.Errorf("noisy neighbour watches: caches not synced")
	}
	return w, nil
}

func (w *noisyWatch) stop() { w.cancel() }

// waitParent polls the cache (every 5 ms, in memory) until the light parent's status
// shows image for its generation, Ready and Synced; at most two minutes.
func (w *noisyWatch) waitParent(ctx context.Context, name, image string) error {
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		obj, ok, err := w.parents.GetStore().GetByKey(lightNS + "/" + name)
		if err != nil || !ok {
			return false, err
		}
		return convergedTo(obj.(*unstructured.Unstructured), image), nil
	})
	if err != nil {
		return fmt.Errorf("light parent %s did not converge to %s: %w", name, image, err)
	}
	return nil
}

// convergedTo reports whether the parent's status is for its generation, Ready and
// Synced, and shows image.
func convergedTo(p *unstructured.Unstructured, image string) bool {
	gen, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration")
	got, _, _ := unstructured.NestedString(p.Object, "status", "image")
	if gen != p.GetGeneration() || got != image {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
	ok := 0
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if (m["type"] == "Ready" || m["type"] == "Synced") && m["status"] == "True" {
			ok++
		}
	}
	return ok == 2
}

// waitChildren waits until the heavy tenant has n children.
func (w *noisyWatch) waitChildren(ctx context.Context, timeout time.Duration, n int) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return len(w.children.GetStore().ListKeys()) == n, nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d heavy children: %w", len(w.children.GetStore().ListKeys()), n, err)
	}
	return nil
}

// writeTimes writes one operation time per line, in seconds, in the order taken (create,
// edit, create, ...), for a look at what the summary hides.
func writeTimes(path string, times []time.Duration) error {
	var b strings.Builder
	for _, t := range times {
		fmt.Fprintf(&b, "%.3f\n", t.Seconds())
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// quantile is the nearest-rank q-quantile of times.
func quantile(times []time.Duration, q float64) time.Duration {
	if len(times) == 0 {
		return 0
	}
	s := slices.Clone(times)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// summary is "median M s, p99 P s (N operations)".
func summary(times []time.Duration) string {
	return fmt.Sprintf("median %.2f s, p99 %.2f s (%d operations)", quantile(times, 0.5).Seconds(), quantile(times, 0.99).Seconds(), len(times))
}
