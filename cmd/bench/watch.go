package main

import (
	"context"
	"fmt"
	"time"

	"github.com/kubecel/kubecel/rules/contract"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// tracker watches the parents and the controller's children in one namespace, so that
// the phases can tell when the cluster reached the state they wait for. Children are
// watched as protobuf to keep the bench's own CPU use low. The limits run under a tracker
// of their own, so that the API server serves the bench's watches in both runs alike.
type tracker struct {
	n                               int
	parents, configs, deploys, svcs cache.SharedIndexInformer
	cancel                          context.CancelFunc
	typedFactory                    informers.SharedInformerFactory
	dynamicFactory                  dynamicinformer.DynamicSharedInformerFactory
}

func startTracker(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, ns string, n int) (*tracker, error) {
	ctx, cancel := context.WithCancel(ctx)
	selector := func(o *metav1.ListOptions) { o.LabelSelector = contract.LabelManagedBy + "=" + contract.ManagedByValue }
	tf := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns), informers.WithTweakListOptions(selector))
	df := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	t := &tracker{
		n:              n,
		parents:        df.ForResource(webapps).Informer(),
		configs:        tf.Core().V1().ConfigMaps().Informer(),
		deploys:        tf.Apps().V1().Deployments().Informer(),
		svcs:           tf.Core().V1().Services().Informer(),
		cancel:         cancel,
		typedFactory:   tf,
		dynamicFactory: df,
	}
	for _, inf := range []cache.SharedIndexInformer{t.parents, t.configs, t.deploys, t.svcs} {
		if err := inf.SetTransform(stripManagedFields); err != nil {
			cancel()
			return nil, err
		}
	}
	tf.Start(ctx.Done())
	df.Start(ctx.Done())
	for typ, ok := range tf.WaitForCacheSync(ctx.Done()) {
		if !ok {
			cancel()
			return nil, fmt.Errorf("watch %v: cache not synced", typ)
		}
	}
	for gvr, ok := range df.WaitForCacheSync(ctx.Done()) {
		if !ok {
			cancel()
			return nil, fmt.Errorf("watch %v: cache not synced", gvr)
		}
	}
	return t, nil
}

func (t *tracker) stop() {
	t.cancel()
	t.typedFactory.Shutdown()
	t.dynamicFactory.Shutdown()
}

// waitFor polls cond every 100 ms until it holds, ctx ends or timeout passes; it logs
// the progress every 10 s, and the error carries the last progress report.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	lastLog := time.Now()
	for {
		ok, progress := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not reached within %s: %s", what, timeout, progress)
		}
		if time.Since(lastLog) >= 10*time.Second {
			logf("%s: %s", what, progress)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// converged: every parent reports Ready and Synced for its current generation, and
// every child exists.
func (t *tracker) converged() (bool, string) {
	ready := 0
	for _, o := range t.parents.GetStore().List() {
		if parentConverged(o.(*unstructured.Unstructured)) {
			ready++
		}
	}
	c, d, s := len(t.configs.GetStore().List()), len(t.deploys.GetStore().List()), len(t.svcs.GetStore().List())
	progress := fmt.Sprintf("%d/%d parents ready, %d configmaps, %d deployments, %d services", ready, t.n, c, d, s)
	return ready == t.n && c == t.n && d == t.n && s == t.n, progress
}

func parentConverged(p *unstructured.Unstructured) bool {
	gen, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration")
	if gen != p.GetGeneration() {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
	want := map[string]bool{contract.ConditionReady: true, contract.ConditionSynced: true}
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m != nil && m["status"] == "True" {
			delete(want, fmt.Sprint(m["type"]))
		}
	}
	return len(want) == 0
}

// updated: every child shows image.
func (t *tracker) updated(image string) (bool, string) {
	c, d, s := 0, 0, 0
	for _, o := range t.configs.GetStore().List() {
		if o.(*corev1.ConfigMap).Data["image"] == image {
			c++
		}
	}
	for _, o := range t.deploys.GetStore().List() {
		cs := o.(*appsv1.Deployment).Spec.Template.Spec.Containers
		if len(cs) > 0 && cs[0].Image == image {
			d++
		}
	}
	for _, o := range t.svcs.GetStore().List() {
		if o.(*corev1.Service).Annotations["bench.kubecel.dev/image"] == image {
			s++
		}
	}
	progress := fmt.Sprintf("updated %d configmaps, %d deployments, %d services of %d each", c, d, s, t.n)
	return c == t.n && d == t.n && s == t.n, progress
}

// gone: no parent and no child is left.
func (t *tracker) gone() (bool, string) {
	p := len(t.parents.GetStore().List())
	c, d, s := len(t.configs.GetStore().List()), len(t.deploys.GetStore().List()), len(t.svcs.GetStore().List())
	return p+c+d+s == 0, fmt.Sprintf("left: %d parents, %d configmaps, %d deployments, %d services", p, c, d, s)
}

// stripManagedFields drops managedFields before an object enters the bench's caches.
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
