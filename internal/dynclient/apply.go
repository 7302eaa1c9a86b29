package dynclient

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/internal/ujson"
)

// client-go's dynamic Apply encodes the object with encoding/json; the client here
// encodes it with ujson (the same bytes, a third of the time) and sends the same request.
// Every other method is client-go's.

// client is a dynamic client whose Apply and ApplyStatus are applier's.
type client struct {
	dynamic.Interface
	rest rest.Interface
}

func (c client) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return resource{c.Interface.Resource(gvr), applier{rest: c.rest, gvr: gvr}}
}

type resource struct {
	dynamic.NamespaceableResourceInterface
	a applier
}

func (r resource) Namespace(ns string) dynamic.ResourceInterface {
	a := r.a
	a.namespace = ns
	return namespaced{r.NamespaceableResourceInterface.Namespace(ns), a}
}

func (r resource) Apply(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions, subresources ...string) (*unstructured.Unstructured, error) {
	return r.a.apply(ctx, name, obj, opts, subresources...)
}

func (r resource) ApplyStatus(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions) (*unstructured.Unstructured, error) {
	return r.a.apply(ctx, name, obj, opts, "status")
}

type namespaced struct {
	dynamic.ResourceInterface
	a applier
}

func (n namespaced) Apply(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions, subresources ...string) (*unstructured.Unstructured, error) {
	return n.a.apply(ctx, name, obj, opts, subresources...)
}

func (n namespaced) ApplyStatus(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions) (*unstructured.Unstructured, error) {
	return n.a.apply(ctx, name, obj, opts, "status")
}

// applier sends server-side applies of one resource, in one namespace or none.
type applier struct {
	rest      rest.Interface
	gvr       schema.GroupVersionResource
	namespace string
}

// parameterCodec encodes the apply's options as client-go's dynamic client does.
var parameterCodec = runtime.NewParameterCodec(meta)

// apply checks what client-go's Apply checks and sends the request it sends.
func (a applier) apply(ctx context.Context, name string, obj *unstructured.Unstructured, opts metav1.ApplyOptions, subresources ...string) (*unstructured.Unstructured, error) {
	if name == "" {
		return nil, errors.New("name is required")
	}
	if msgs := rest.IsValidPathSegmentName(a.namespace); len(msgs) != 0 {
		return nil, fmt.Errorf("invalid namespace %q: %v", a.namespace, msgs)
	}
	if msgs := rest.IsValidPathSegmentName(name); len(msgs) != 0 {
		return nil, fmt.Errorf("invalid resource name %q: %v", name, msgs)
	}
	if len(obj.GetManagedFields()) > 0 {
		return nil, errors.New("cannot apply an object with managed fields already set")
	}
	body, err := ujson.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("failed to marshal apply configuration: %w", err)
	}
	patchOpts := opts.ToPatchOptions()
	var out unstructured.Unstructured
	err = a.rest.Patch(types.ApplyYAMLPatchType).
		AbsPath(append(a.path(name), subresources...)...).
		Body(body).
		SpecificallyVersionedParams(&patchOpts, parameterCodec, schema.GroupVersion{Version: "v1"}).
		Do(ctx).Into(&out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// path is the URL path of the named object, as client-go's dynamic client makes it.
func (a applier) path(name string) []string {
	p := []string{"api"}
	if a.gvr.Group != "" {
		p = []string{"apis", a.gvr.Group}
	}
	p = append(p, a.gvr.Version)
	if a.namespace != "" {
		p = append(p, "namespaces", a.namespace)
	}
	return append(p, a.gvr.Resource, name)
}
