package engine

import (
	"context"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/rules"
)

// ClusterSchemas reads the CRDs served by the cluster, so that rules are type-checked
// against the parents' and children's OpenAPI schemas. Built-in kinds stay dynamically
// typed.
func ClusterSchemas(ctx context.Context, cfg *rest.Config) (rules.SchemaSource, error) {
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	list, err := client.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return rules.SchemasFromCRDs(toPointers(list.Items)...), nil
}

func toPointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
