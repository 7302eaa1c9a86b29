package revisions

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubecel/kubecel/internal/rollout"
)

// ParseParentResource reads a revision's parent resource, group/version/resource
// ("/v1/pods" for the core group).
func ParseParentResource(s string) (schema.GroupVersionResource, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return schema.GroupVersionResource{}, fmt.Errorf("parent resource %q: want group/version/resource (/v1/pods for the core group)", s)
	}
	return schema.GroupVersionResource{Group: parts[0], Version: parts[1], Resource: parts[2]}, nil
}

// ListParents lists the parents of a rule's revision: the objects of its parent resource
// in its namespaces that match its selector, as its document says (its when: expression
// is not evaluated).
func ListParents(ctx context.Context, dyn dynamic.Interface, rev *rollout.Revision) ([]unstructured.Unstructured, error) {
	gvr, err := ParseParentResource(rev.ParentResource)
	if err != nil {
		return nil, fmt.Errorf("rule %q: %s: %w", rev.Rule, Text(rev), err)
	}
	namespaces, selector, err := parentSelection(rev.Document)
	if err != nil {
		return nil, fmt.Errorf("rule %q: %s: %w", rev.Rule, Text(rev), err)
	}
	var items []unstructured.Unstructured
	opts := metav1.ListOptions{Limit: 500, LabelSelector: selector}
	for {
		list, err := dyn.Resource(gvr).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("rule %q: list its parents (%s): %w", rev.Rule, gvr.GroupResource(), err)
		}
		for _, item := range list.Items {
			if len(namespaces) == 0 || slices.Contains(namespaces, item.GetNamespace()) {
				items = append(items, item)
			}
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return items, nil
		}
	}
}

// ParentKey is a parent as a rollout orders it.
func ParentKey(p *unstructured.Unstructured) rollout.Parent {
	return rollout.Parent{Namespace: p.GetNamespace(), Name: p.GetName()}
}

// StepMembers are the parents of the steps a revision's rollout has taken, in the
// rollout's order (the canaries its policy names first), named as ParentKey names them.
func StepMembers(cur *rollout.Revision, items []unstructured.Unstructured) []rollout.Parent {
	canary, err := canaries(cur.Document)
	if err != nil {
		canary = func(string, map[string]string) bool { return false } // parentSelection reports the document
	}
	order := make([]rollout.Parent, len(items))
	for i := range items {
		order[i] = ParentKey(&items[i])
		order[i].Canary = canary(items[i].GetNamespace(), items[i].GetLabels())
	}
	rollout.Order(order, cur.Hash)
	members := order[:rollout.Members(cur.Steps, cur.Step, len(order))]
	for i := range members {
		members[i].Canary = false
	}
	return members
}

// AtRevision reports whether a parent is at a revision: the rule recorded it on the
// parent, or, for a revision without a rollout policy (whose parents do not record it),
// recorded none.
func AtRevision(p *unstructured.Unstructured, rev *rollout.Revision) bool {
	return rollout.At(p, rev.Rule, rev.SyncedCondition, rev.Hash) || len(rev.Steps) == 0 && rollout.Unrecorded(p, rev.Rule, rev.SyncedCondition)
}

// canaries reads, from a revision's document, which parents its rollout's policy makes
// canaries (rules.Rollout.IsCanary).
func canaries(document []byte) (func(namespace string, labels map[string]string) bool, error) {
	var doc struct {
		Rollout *struct {
			Canaries *struct {
				Namespaces []string              `json:"namespaces"`
				Selector   *metav1.LabelSelector `json:"selector"`
			} `json:"canaries"`
		} `json:"rollout"`
	}
	none := func(string, map[string]string) bool { return false }
	if len(document) == 0 {
		return none, nil
	}
	if err := json.Unmarshal(document, &doc); err != nil {
		return nil, fmt.Errorf("read its rollout's canaries: %w", err)
	}
	if doc.Rollout == nil || doc.Rollout.Canaries == nil {
		return none, nil
	}
	c := doc.Rollout.Canaries
	sel := labels.Everything()
	if c.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(c.Selector)
		if err != nil {
			return nil, fmt.Errorf("its rollout's canaries: %w", err)
		}
		sel = s
	}
	return func(ns string, lbls map[string]string) bool {
		return (len(c.Namespaces) == 0 || slices.Contains(c.Namespaces, ns)) && sel.Matches(labels.Set(lbls))
	}, nil
}

// parentSelection reads, from a revision's document (the rule's source as JSON), the
// namespaces its parents are in (none: every namespace) and its parent label selector.
func parentSelection(document []byte) ([]string, string, error) {
	var doc struct {
		Parent struct {
			Namespaces []string              `json:"namespaces"`
			Selector   *metav1.LabelSelector `json:"selector"`
		} `json:"parent"`
	}
	if len(document) == 0 {
		return nil, "", nil
	}
	if err := json.Unmarshal(document, &doc); err != nil {
		return nil, "", fmt.Errorf("read its document: %w", err)
	}
	if doc.Parent.Selector == nil {
		return doc.Parent.Namespaces, "", nil
	}
	sel, err := metav1.LabelSelectorAsSelector(doc.Parent.Selector)
	if err != nil {
		return nil, "", fmt.Errorf("its parent selector: %w", err)
	}
	return doc.Parent.Namespaces, sel.String(), nil
}
