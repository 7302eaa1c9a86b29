package rollouts

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/internal/rollout"
)

// parentSeen is what the worker read of a parent at one resourceVersion.
type parentSeen struct {
	version string
	canary  bool
	// revision is the revision the parent is at ("" when unknown); at reports whether
	// it is the target; health says why it is not healthy there ("" when it is).
	revision string
	at       bool
	health   string
}

// look refreshes what is known of the rule's parents and returns them in rollout
// order. It decodes only the parents that changed since the last look.
func (r *Rule) look(ctx context.Context) ([]watch.Key, map[watch.Key]parentSeen) {
	r.lookMu.Lock()
	defer r.lookMu.Unlock()
	st, rule := r.target, r.target.Rule
	keys := st.ParentKeys()
	fresh := make(map[watch.Key]parentSeen, len(keys))
	order := make([]rollout.Parent, 0, len(keys))
	byName := make(map[rollout.Parent]watch.Key, len(keys))
	for _, key := range keys {
		version, ok := st.ParentVersion(key)
		if !ok {
			continue
		}
		seen, ok := r.seen[key]
		if !ok || seen.version != version {
			u, found, err := st.Get(key)
			if err != nil || !found {
				if err != nil {
					klog.FromContext(ctx).Error(err, "Cannot read a parent for the rollout", "rule", rule.Name, "parent", key.String())
				}
				continue
			}
			seen = parentSeen{
				version:  version,
				canary:   rule.Rollout.IsCanary(u.GetNamespace(), u.GetLabels()),
				revision: rollout.RevisionOf(u, rule.Name),
				health:   rollout.ParentHealth(u, rule.Name, rule.ReadyCondition, rule.SyncedCondition, rule.Revision),
			}
			seen.at = seen.revision == rule.Revision
		}
		fresh[key] = seen
		p := rollout.Parent{Namespace: key.Namespace, Name: key.Name, Canary: seen.canary}
		order = append(order, p)
		byName[p] = key
	}
	r.seen = fresh
	rollout.Order(order, rule.Revision)
	ordered := make([]watch.Key, len(order))
	for i, p := range order {
		ordered[i] = byName[p]
	}
	return ordered, fresh
}

// forget drops what was read of the parents (a rollout that ended).
func (r *Rule) forget() {
	r.lookMu.Lock()
	defer r.lookMu.Unlock()
	r.seen = nil
}

// atTarget are the parents the last look saw at the target.
func (r *Rule) atTarget() map[watch.Key]struct{} {
	r.lookMu.Lock()
	defer r.lookMu.Unlock()
	out := map[watch.Key]struct{}{}
	for key, s := range r.seen {
		if s.at {
			out[key] = struct{}{}
		}
	}
	return out
}

// ParentsByRevision counts the rule's parents by the revision they are at, while a
// rollout is under way (nil otherwise): what the metrics report.
func (r *Rule) ParentsByRevision(ctx context.Context) map[string]int {
	if r.stable.Load() == nil {
		return nil
	}
	_, seen := r.look(ctx)
	out := map[string]int{}
	for _, s := range seen {
		out[s.revision]++
	}
	return out
}

// healthy evaluates the rule's `healthy` over the members of the steps taken, read from
// the cache (decoded only here: once every member is healthy).
func healthy(ctx context.Context, st *watch.Rule, members []watch.Key) (bool, error) {
	objects := make([]map[string]any, 0, len(members))
	for _, key := range members {
		u, found, err := st.Get(key)
		if err != nil {
			return false, err
		}
		if found {
			objects = append(objects, u.Object)
		}
	}
	return st.Rule.Rollout.Healthy(ctx, objects)
}
