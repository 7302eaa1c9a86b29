package dev

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/kubecel/kubecel/examples"
)

// samplesFieldManager owns the sample parents that `kubecel dev` applies.
const samplesFieldManager = "kubecel-dev"

// exampleObjects are every example's sample parents, after the objects they read
// (refs.yaml), so that the parents need not wait for them.
func exampleObjects() ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, data := range slices.Concat(examples.Refs(), examples.Parents()) {
		docs, err := decodeObjects(data)
		if err != nil {
			return nil, fmt.Errorf("example parents: %w", err)
		}
		objs = append(objs, docs...)
	}
	return objs, nil
}

// sample is an object that dev applied: its resource and the object as applied.
type sample struct {
	gvr schema.GroupVersionResource
	obj *unstructured.Unstructured
}

// applySamples server-side applies objects, Namespaces first, and returns them with
// their resources.
func applySamples(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured) ([]sample, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = samplesFieldManager
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	// Namespaced samples may live in a sample Namespace.
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return boolRank(a.GetKind() != "Namespace") - boolRank(b.GetKind() != "Namespace")
	})
	var applied []sample
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		m, err := servedMapping(ctx, mapper, gvk)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		got, err := client.Resource(m.Resource).Namespace(obj.GetNamespace()).Apply(ctx, obj.GetName(), obj,
			metav1.ApplyOptions{FieldManager: samplesFieldManager, Force: true})
		if err != nil {
			return nil, fmt.Errorf("apply %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
		applied = append(applied, sample{gvr: m.Resource, obj: got})
	}
	return applied, nil
}

// kindWait is how long dev waits for the kind of an object to be served: a kind that a
// rule's api defines is served once the controller has created its CRD.
const kindWait = time.Minute

// servedMapping maps gvk to its resource, waiting up to kindWait while it is not served.
func servedMapping(ctx context.Context, mapper *restmapper.DeferredDiscoveryRESTMapper, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	var m *meta.RESTMapping
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, kindWait, true, func(context.Context) (bool, error) {
		var err error
		m, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			mapper.Reset()
			return false, nil
		}
		return err == nil, err
	})
	if wait.Interrupted(err) {
		return nil, fmt.Errorf("kind %s is not served (after %s)", gvk, kindWait)
	}
	return m, err
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// decodeObjects reads the objects of a multi-document YAML file, skipping empty
// documents.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}
