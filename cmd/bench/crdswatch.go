package main

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubecel/kubecel/rules/contract"
)

// crdsWatch follows the --crds phase's parents (an informer per resource) and the
// controller's ConfigMaps and Services in the bench namespace.
type crdsWatch struct {
	dyn      dynamic.Interface
	done     <-chan struct{} // closed by stop
	cancel   context.CancelFunc
	configs  cache.SharedIndexInformer
	services cache.SharedIndexInformer
	typed    informers.SharedInformerFactory

	mu      sync.Mutex
	parents map[string]cache.SharedIndexInformer // by rule
}

func startCRDsWatch(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface) (*crdsWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	selector := func(o *metav1.ListOptions) { o.LabelSelector = contract.LabelManagedBy + "=" + contract.ManagedByValue }
	tf := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(benchNS), informers.WithTweakListOptions(selector))
	w := &crdsWatch{dyn: dyn, done: ctx.Done(), cancel: cancel, typed: tf, parents: map[string]cache.SharedIndexInformer{},
		configs: tf.Core().V1().ConfigMaps().Informer(), services: tf.Core().V1().Services().Informer()}
	for _, inf := range []cache.SharedIndexInformer{w.configs, w.services} {
		if err := inf.SetTransform(stripManagedFields); err != nil {
			cancel()
			return nil, err
		}
	}
	tf.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), w.configs.HasSynced, w.services.HasSynced) {
		cancel()
		return nil, fmt.Errorf("watch children: caches not synced")
	}
	return w, nil
}

// watch starts an informer on the parents of each kind and waits until all are synced.
func (w *crdsWatch) watch(kinds []crdKind) error {
	var synced []cache.InformerSynced
	for _, k := range kinds {
		inf := dynamicinformer.NewFilteredDynamicInformer(w.dyn, k.gvr(), benchNS, 0, cache.Indexers{}, nil).Informer()
		if err := inf.SetTransform(stripManagedFields); err != nil {
			return err
		}
		go inf.Run(w.done)
		synced = append(synced, inf.HasSynced)
		w.mu.Lock()
		w.parents[k.rule] = inf
		w.mu.Unlock()
	}
	if !cache.WaitForCacheSync(w.done, synced...) {
		return fmt.Errorf("watch parents: caches not synced")
	}
	return nil
}

func (w *crdsWatch) stop() {
	w.cancel()
	w.typed.Shutdown()
}

// parent is the rule's parent by name from the cache; nil when not there.
func (w *crdsWatch) parent(rule, name string) *unstructured.Unstructured {
	w.mu.Lock()
	inf := w.parents[rule]
	w.mu.Unlock()
	if inf == nil {
		return nil
	}
	o, ok, _ := inf.GetStore().GetByKey(benchNS + "/" + name)
	if !ok {
		return nil
	}
	return o.(*unstructured.Unstructured)
}

// config is a ConfigMap child by name; nil when not there.
func (w *crdsWatch) config(name string) *corev1.ConfigMap {
	o, ok, _ := w.configs.GetStore().GetByKey(benchNS + "/" + name)
	if !ok {
		return nil
	}
	return o.(*corev1.ConfigMap)
}

// hasService reports whether the Service child of that name exists.
func (w *crdsWatch) hasService(name string) bool {
	_, ok, _ := w.services.GetStore().GetByKey(benchNS + "/" + name)
	return ok
}

// at reports whether a parent is converged (Ready and Synced for its generation) with
// edit as its status's edit value ("" for none), and its two children exist, the
// ConfigMap with the same edit value.
func (w *crdsWatch) at(k crdKind, j int, edit string) bool {
	name := k.parentName(j)
	p := w.parent(k.rule, name)
	if p == nil || !parentConverged(p) {
		return false
	}
	got, _, _ := unstructured.NestedString(p.Object, "status", "edit")
	cm := w.config(name + "-config")
	return got == edit && cm != nil && cm.Data["edit"] == edit && w.hasService(name)
}

// converged counts the kinds' parents that are at edit value edits[rule] (see at), and
// says how far they are.
func (w *crdsWatch) converged(kinds []crdKind, edits map[string]string) (int, int, string) {
	done, all := 0, 0
	for _, k := range kinds {
		for j := range k.parents {
			all++
			if w.at(k, j, edits[k.rule]) {
				done++
			}
		}
	}
	progress := fmt.Sprintf("%d/%d parents converged; %d ConfigMaps, %d Services", done, all, len(w.configs.GetStore().ListKeys()), len(w.services.GetStore().ListKeys()))
	return done, all, progress
}
