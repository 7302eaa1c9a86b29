package main

import (
	"context"
	"errors"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// With --refs each parent reads its own settings ConfigMap. The controller reads them
// from the cluster, where createSettings puts them before the limits run (so that both
// see the same stored state); the limits and the baseline, which evaluate the rule
// themselves, read the same objects from settingsSource.

// settingsTier is the one value every settings ConfigMap holds.
const settingsTier = "gold"

// settings is the settings ConfigMap of parent i in namespace ns.
func settings(ns, parent string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": parent + "-settings", "namespace": ns},
		"data":     map[string]any{"tier": settingsTier},
	}}
}

// createSettings creates the N settings ConfigMaps in the controller's namespace.
func (b *bench) createSettings(ctx context.Context) error {
	logf("settings: creating %d ConfigMaps that the parents read", b.cfg.n)
	start := time.Now()
	err := b.parallel(ctx, b.cfg.n, func(ctx context.Context, c dynamic.Interface, i int) error {
		_, err := c.Resource(configmaps).Namespace(benchNS).Create(ctx, settings(benchNS, parentName(i)), metav1.CreateOptions{})
		return err
	})
	logf("settings: %s", time.Since(start).Round(time.Millisecond))
	return err
}

// settingsSource is a rules.RefSource that holds every settings ConfigMap.
type settingsSource struct{}

func (settingsSource) Get(_ context.Context, gvk schema.GroupVersionKind, namespace, name string) (map[string]any, bool, error) {
	parent, ok := strings.CutSuffix(name, "-settings")
	if gvk.Kind != "ConfigMap" || !ok {
		return nil, false, nil
	}
	return settings(namespace, parent).Object, true, nil
}

func (settingsSource) List(context.Context, schema.GroupVersionKind, string, labels.Selector) ([]map[string]any, error) {
	return nil, errors.New("the bench's rule has no selector ref")
}
