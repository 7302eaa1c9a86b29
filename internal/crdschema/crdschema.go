// Package crdschema reads the schemas of the custom resources a cluster serves, for the
// type checking of rules (rules.Options.Schemas) by the commands that load rules
// against a cluster: run, plan, check --kubeconfig and the example tests; and what the
// cluster serves (rules.Options.Served), for check --kubeconfig.
package crdschema

import (
	"context"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/rules"
)

// FromCluster reads the CRDs served by the cluster, so that rules are type-checked
// against the parents' and children's OpenAPI schemas. It knows no built-in kind: those
// are checked against the schemas embedded in package rules (rules.BuiltinSchemas),
// which rules.Load consults when this source has none.
func FromCluster(ctx context.Context, cfg *rest.Config) (rules.SchemaSource, error) {
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
