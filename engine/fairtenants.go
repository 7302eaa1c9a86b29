package engine

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// tenants tells the tenant of a namespace: the value of its fairness key label
// (Options.FairnessKey), read from a cache of the namespaces that carry the label, their
// name and that label alone.
type tenants struct {
	key      string
	informer cache.SharedIndexInformer
}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// newTenants checks the label key and builds the cache; run starts it.
func newTenants(meta metadata.Interface, key string) (*tenants, error) {
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return nil, fmt.Errorf("fairness key %q is not a label key: %s", key, strings.Join(errs, "; "))
	}
	inf := metadatainformer.NewFilteredMetadataInformer(meta, namespacesGVR, "", 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = key }).Informer()
	if err := inf.SetTransform(func(obj any) (any, error) {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return obj, nil
		}
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, ResourceVersion: m.ResourceVersion, Labels: map[string]string{key: m.Labels[key]},
		}}, nil
	}); err != nil {
		return nil, err
	}
	return &tenants{key: key, informer: inf}, nil
}

// of is the tenant of a namespace, "" when its label is not known (not set, or the cache
// has not seen it yet).
func (t *tenants) of(namespace string) string {
	obj, ok, err := t.informer.GetStore().GetByKey(namespace)
	if err != nil || !ok {
		return ""
	}
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return ""
	}
	return m.Labels[t.key]
}

// run checks that the controller may list and watch namespaces, starts the cache and
// waits until it has synced (or ctx ends).
func (t *tenants) run(ctx context.Context, kube kubernetes.Interface) error {
	var denied []string
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Version: "v1", Resource: "namespaces", Verb: verb},
		}}
		got, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("fairness key %q: check permissions: %w", t.key, err)
		}
		if !got.Status.Allowed {
			denied = append(denied, verb)
		}
	}
	if len(denied) > 0 {
		return fmt.Errorf("fairness key %q: the controller reads the label from namespaces, and may not %s them: grant list and watch on namespaces", t.key, strings.Join(denied, " or "))
	}
	go t.informer.Run(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), t.informer.HasSynced)
	return nil
}
