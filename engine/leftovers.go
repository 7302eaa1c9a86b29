package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kubecel/kubecel/rules/contract"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// watchLeftovers makes the named running rules also watch the kinds of objects that
// carry their labels but that no child of theirs produces any more. A running
// controller that reloads a rule keeps watching the kinds of the rule's previous
// version, so it prunes such objects; a plan starts from the new rules alone and finds
// those kinds here instead. Resources that cannot be listed are skipped: the
// controller could not prune their objects either.
func (c *Controller) watchLeftovers(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	lists, err := c.kube.Discovery().ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return fmt.Errorf("discover the served resources: %w", err)
	}
	selector := fmt.Sprintf("%s=%s,%s in (%s)", contract.LabelManagedBy, contract.ManagedByValue, contract.LabelRule, strings.Join(names, ","))
	found := map[string]map[schema.GroupVersionKind]bool{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") {
				continue
			}
			objs, err := c.meta.Resource(gv.WithResource(r.Name)).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				continue
			}
			for _, o := range objs.Items {
				rule := o.Labels[contract.LabelRule]
				if found[rule] == nil {
					found[rule] = map[schema.GroupVersionKind]bool{}
				}
				found[rule][gv.WithKind(r.Kind)] = true
			}
		}
	}
	v := c.view.Load()
	for rule, kinds := range found {
		st := v.get(rule)
		if st == nil {
			continue
		}
		for gvk := range kinds {
			if err := c.watcher.AddChildKind(ctx, st, gvk); err != nil {
				return err
			}
		}
	}
	return nil
}
