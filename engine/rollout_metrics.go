package engine

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubecel/kubecel/engine/internal/rollouts"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/rules/contract"

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
		rev := rr.Revision()
		m := metrics.Rollout{Rule: rev.Rule, Revision: rev.Hash, Number: rev.Number, Phase: string(rev.Phase), Step: rev.Step, Parents: map[string]int{}}
		if ro := rr.Target().Rule.Rollout; ro != nil {
			m.Steps = len(ro.Steps)
		}
		if rev.Phase == rollout.Complete {
			m.Step = m.Steps
		}
		// While a rollout is under way: at rest every parent is at the revision.
		for revision, n := range rr.ParentsByRevision(context.Background()) {
			m.Parents[revision] = n
		}
		out = append(out, m)
	}
	return out
}

// rolloutEngine is the controller as the rollouts see it.
type rolloutEngine struct{ c *Controller }

func (e rolloutEngine) Rollout(rule string) *rollouts.Rule {
	if rr := e.c.view.Load().running[rule]; rr != nil {
		return rr.rollout
	}
	return nil
}

func (e rolloutEngine) Idle() bool { return !e.c.opts.holdFirstRevisions && e.c.Idle() }

func (e rolloutEngine) Enqueue(key watch.Key) { e.c.queue.Add(key) }

func (e rolloutEngine) Restart(ctx context.Context, target *watch.Rule) {
	e.c.life.restart(ctx, target)
}

func (e rolloutEngine) StopStable(r *rollouts.Rule, stable *watch.Rule) {
	if r.StopStable(stable) {
		e.c.watcher.Stop(stable)
	}
}

// noticeRevisions tells the rollouts of every change of a stored revision.
func noticeRevisions(c *rollouts.Controller) cache.ResourceEventHandler {
	notice := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if cr, ok := obj.(*appsv1.ControllerRevision); ok {
			c.Notice(cr.Labels[contract.LabelRule])
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: notice, UpdateFunc: func(_, n any) { notice(n) }, DeleteFunc: notice}
}
