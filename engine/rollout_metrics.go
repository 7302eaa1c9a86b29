package engine

import (
	"context"

	"github.com/kubecel/kubecel/engine/internal/metrics"
	"github.com/kubecel/kubecel/internal/rollout"
)

// rolloutMetrics reads, at a scrape, where each running rule's revisions stand: its
// rollout's phase and step and, while a rollout is under way, its parents by revision
// (read from the parents' cache; only the parents that changed since the last read are
// decoded).
func (c *Controller) rolloutMetrics() []metrics.Rollout {
	rrs := c.view.Load().rollouts()
	out := make([]metrics.Rollout, 0, len(rrs))
	for _, rr := range rrs {
		rev := rr.revision()
		m := metrics.Rollout{Rule: rev.Rule, Revision: rev.Hash, Number: rev.Number, Phase: string(rev.Phase), Step: rev.Step, Parents: map[string]int{}}
		if ro := rr.target.Rule.Rollout; ro != nil {
			m.Steps = len(ro.Steps)
		}
		if rev.Phase == rollout.Complete {
			m.Step = m.Steps
		}
		if rr.stable.Load() != nil {
			// While a rollout is under way: at rest every parent is at the revision.
			_, seen := rr.look(context.Background())
			for _, s := range seen {
				m.Parents[s.revision]++
			}
		}
		out = append(out, m)
	}
	return out
}
