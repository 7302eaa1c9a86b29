package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/kubecel/kubecel/engine/plan"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// DroppedRules finds the rules that the controller's rule set no longer has although
// their children are in the cluster (in namespace, or everywhere when it is ""): objects
// that this installation proves it made for a rule of that name. A controller that
// reloads such rules stops each of them (see releaseParents): plan says so, with what
// the rule serves. It lists every listable resource once, restricted to kubecel's and
// the installation's labels; resources that cannot be listed are skipped.
func (c *Controller) DroppedRules(ctx context.Context, namespace string) ([]plan.DroppedRule, error) {
	lists, err := c.kube.Discovery().ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discover the served resources: %w", err)
	}
	known := c.view.Load().known
	selector := fmt.Sprintf("%s=%s,%s=%s", contract.LabelManagedBy, contract.ManagedByValue, contract.LabelInstallation, c.opts.Identity.Name())
	type found struct {
		parents  map[string]bool
		children int
		kinds    map[string]bool
	}
	dropped := map[string]*found{}
	// The parents' resources, by group/resource, at their preferred version.
	versions := map[schema.GroupResource]schema.GroupVersionResource{}
	parentsOf := map[schema.GroupVersionResource]bool{}
	var claims []rules.ChildClaim
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			versions[schema.GroupResource{Group: gv.Group, Resource: r.Name}] = gv.WithResource(r.Name)
		}
	}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			objs, err := c.meta.Resource(gv.WithResource(r.Name)).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				continue
			}
			gk := schema.GroupKind{Group: gv.Group, Kind: r.Kind}
			for _, o := range objs.Items {
				claim := rules.ClaimOf(gk, o.Namespace, o.Name, o.Labels, o.Annotations)
				if known(claim.Rule) || !c.opts.Identity.Proves(claim, o.Annotations[contract.AnnotationProof]) {
					continue
				}
				claims = append(claims, claim)
				if gvr, ok := versions[schema.ParseGroupResource(parentResource(claim.Parent))]; ok {
					parentsOf[gvr] = true
				}
			}
		}
	}
	live, err := liveParents(ctx, c.meta, parentsOf)
	if err != nil {
		return nil, err
	}
	for _, claim := range claims {
		if !live[claim.ParentUID] {
			continue // a child whose parent is gone, or going: no rule serves it
		}
		f := dropped[claim.Rule]
		if f == nil {
			f = &found{parents: map[string]bool{}, kinds: map[string]bool{}}
			dropped[claim.Rule] = f
		}
		f.parents[claim.ParentUID] = true
		f.children++
		f.kinds[gkString(claim.GK)] = true
	}
	out := make([]plan.DroppedRule, 0, len(dropped))
	for name, f := range dropped {
		d := plan.DroppedRule{Rule: name, Parents: len(f.parents), Children: f.children}
		for k := range f.kinds {
			d.Kinds = append(d.Kinds, k)
		}
		slices.Sort(d.Kinds)
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b plan.DroppedRule) int { return strings.Compare(a.Rule, b.Rule) })
	return out, nil
}

// gkString is Kind.group, or Kind for the core group.
func gkString(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

// parentResource is the resource.group of an AnnotationParent value
// (group/resource/namespace/name).
func parentResource(parent string) string {
	parts := strings.Split(parent, "/")
	if len(parts) < 2 {
		return ""
	}
	if parts[0] == "" {
		return parts[1]
	}
	return parts[1] + "." + parts[0]
}

// liveParents lists the objects of the given resources that are not being deleted, nor
// in a namespace being deleted, by UID.
func liveParents(ctx context.Context, meta metadata.Interface, resources map[schema.GroupVersionResource]bool) (map[string]bool, error) {
	live := map[string]bool{}
	if len(resources) == 0 {
		return live, nil
	}
	terminating := map[string]bool{}
	namespaces, err := meta.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	for _, ns := range namespaces.Items {
		terminating[ns.Name] = ns.DeletionTimestamp != nil
	}
	for gvr := range resources {
		objs, err := meta.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue // cannot be read: its children are not counted
		}
		for _, o := range objs.Items {
			if o.DeletionTimestamp == nil && !terminating[o.Namespace] {
				live[string(o.UID)] = true
			}
		}
	}
	return live, nil
}
