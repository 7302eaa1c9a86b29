package rolloutcmd

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kubecel/kubecel/internal/cli/revisions"
	"github.com/kubecel/kubecel/internal/rollout"
)

// rolloutView is what status shows of a rule's current revision and its parents.
type rolloutView struct {
	rule string
	revs []*rollout.Revision
	cur  *rollout.Revision
	// parents is false when the revision does not say where its parents are.
	parents bool
	// total parents, how many are at the current revision and at the one it rolls from.
	total, atCur, atFrom int
	// members is how many parents the steps taken hold (Progressing or Paused); failing
	// names those not healthy, in the rollout's order: "ns/name: reason".
	members int
	failing []string
}

// view reads the parents of a rule's current revision (the objects of its parent
// resource in its namespaces that match its selector, as its document says) and sees
// where they are.
func (c *rolloutClient) view(ctx context.Context, rule string) (*rolloutView, error) {
	revs, cur, err := c.current(ctx, rule)
	if err != nil {
		return nil, err
	}
	v := &rolloutView{rule: rule, revs: revs, cur: cur}
	if cur.ParentResource == "" {
		return v, nil
	}
	dyn, err := dynamic.NewForConfig(c.cfg)
	if err != nil {
		return nil, err
	}
	items, err := revisions.ListParents(ctx, dyn, cur)
	if err != nil {
		return nil, err
	}
	v.parents = true
	v.count(items)
	return v, nil
}

// count places the parents: at which revision, and which members of the steps taken
// are not healthy.
func (v *rolloutView) count(items []unstructured.Unstructured) {
	cur := v.cur
	from := rollout.Find(v.revs, cur.From)
	byKey := make(map[rollout.Parent]*unstructured.Unstructured, len(items))
	for i := range items {
		p := &items[i]
		byKey[revisions.ParentKey(p)] = p
		switch {
		case revisions.AtRevision(p, cur):
			v.atCur++
		case from != nil && revisions.AtRevision(p, from):
			v.atFrom++
		}
	}
	v.total = len(items)
	if cur.Phase != rollout.Progressing && cur.Phase != rollout.Paused {
		return
	}
	members := revisions.StepMembers(cur, items)
	v.members = len(members)
	for _, key := range members {
		if why := rollout.ParentHealth(byKey[key], cur.Rule, cur.ReadyCondition, cur.SyncedCondition, cur.Hash); why != "" {
			v.failing = append(v.failing, rolloutParentName(key)+": "+why)
		}
	}
}

func rolloutParentName(p rollout.Parent) string {
	if p.Namespace == "" {
		return p.Name
	}
	return p.Namespace + "/" + p.Name
}
