package rollouts

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/rules"
)

// Engine is what the rollouts need of the controller.
type Engine interface {
	// Rollout is the rollout state of the running rule of that name, nil when the rule
	// does not run or keeps no revisions.
	Rollout(rule string) *Rule
	// Enqueue queues a parent's reconcile.
	Enqueue(key watch.Key)
	// Restart starts target's rule again, its revisions read anew (an undo of a
	// completed rollout), unless target no longer runs.
	Restart(ctx context.Context, target *watch.Rule)
	// StopStable stops the version a completed rollout rolled from.
	StopStable(r *Rule, stable *watch.Rule)
	// Idle reports whether no parent is queued or being reconciled.
	Idle() bool
}

// synced is how soon a rule whose caches are still filling is looked at again.
const synced = 250 * time.Millisecond

// idleEvery is how often a rule whose first revision waits for the controller to be
// idle is looked at again.
const idleEvery = time.Second

// DefaultFirstWithin is Controller.FirstWithin's default.
const DefaultFirstWithin = 30 * time.Second

// Controller takes the rollouts' steps: one rule at a time, as events and timers say.
type Controller struct {
	// FirstWithin is how long after a rule started its first revision waits for the
	// controller to be idle before it is stored anyway: a controller that is never idle
	// still keeps the rules' history.
	FirstWithin time.Duration

	revs   *Revisions
	engine Engine
	queue  workqueue.TypedRateLimitingInterface[string]
}

// New returns a controller of the rules' rollouts; Run starts it. Its queue's metrics
// (workqueue_*{name="rollouts"}) go to provider.
func New(revs *Revisions, engine Engine, provider workqueue.MetricsProvider) *Controller {
	return &Controller{FirstWithin: DefaultFirstWithin, revs: revs, engine: engine, queue: workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "rollouts", MetricsProvider: provider})}
}

// Notice asks for a look at the rule's rollout: one of its parents or its stored
// revision changed, or it started.
func (c *Controller) Notice(rule string) { c.queue.Add(rule) }

// Run looks at the rules noticed until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for {
		name, quit := c.queue.Get()
		if quit {
			return
		}
		after, err := c.process(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("rule", name)), name)
		switch {
		case err != nil:
			klog.FromContext(ctx).Error(err, "Rollout failed; retrying", "rule", name)
			c.queue.AddRateLimited(name)
		case after > 0:
			c.queue.Forget(name)
			c.queue.AddAfter(name, after)
		default:
			c.queue.Forget(name)
		}
		c.queue.Done(name)
	}
}

// process looks at one rule's rollout, and says when to look again even if nothing
// changes (0: on the next event).
func (c *Controller) process(ctx context.Context, name string) (time.Duration, error) {
	r := c.engine.Rollout(name)
	if r == nil {
		return 0, nil
	}
	logger := klog.FromContext(ctx).WithValues("revision", r.target.Rule.Revision)
	last := r.Revision()
	rev, notProven := c.revs.stored(last)
	if notProven {
		logger.Error(nil, "The stored rollout state does not carry this installation's proof: someone else wrote it; it is not acted on", "number", last.Number)
		c.revs.event(last, corev1.EventTypeWarning, "RolloutStateNotProven", "the rollout state stored here was not written by this installation and is not acted on; kubecel rollout undo or resume writes one that is")
	}
	if rev != last {
		c.follow(ctx, r, last, rev)
	}
	if rev.Object == nil && !c.revs.DryRun {
		// The rule's first revision (Revisions.Commit), or one whose storing failed when
		// the rule started: its state is written nowhere yet, so no step is taken until
		// it is stored. A first one waits while parents are reconciled.
		if rev.From == "" && !c.engine.Idle() && time.Since(r.started) < c.FirstWithin {
			return idleEvery, nil
		}
		got, err := c.revs.storeUnstored(ctx, r, rev)
		switch {
		case err == nil:
			c.follow(ctx, r, rev, got)
			return 0, nil
		case apierrors.IsAlreadyExists(err):
			return synced, nil // another replica stored it: the cache shows it soon
		}
		return 0, fmt.Errorf("store the rule's revision: %w", err)
	}
	stable := r.stable.Load()
	if stable == nil {
		if rev.Phase == rollout.RolledBack && rev.From != "" {
			// An undo of a complete rollout: the revision it rolled from runs again.
			c.engine.Restart(ctx, r.target)
		}
		return 0, nil
	}
	switch rev.Phase {
	case rollout.Complete, rollout.Superseded:
		c.complete(ctx, r, stable, rev)
		return 0, nil
	case rollout.RolledBack:
		return 0, nil
	}
	if !r.target.Synced() || !stable.Synced() {
		// Members from a cache still filling would leave out parents already at the new
		// revision; until then, each parent's own revision decides (Pick).
		return synced, nil
	}
	return c.step(ctx, r, rev)
}

// step moves the members of the steps taken to the target and, on a healthy step, writes
// the rollout's next state.
func (c *Controller) step(ctx context.Context, r *Rule, rev *rollout.Revision) (time.Duration, error) {
	ordered, seen := r.look(ctx)
	m := rollout.Members(rev.Steps, rev.Step, len(ordered))
	members := make(map[watch.Key]struct{}, m)
	for i, key := range ordered {
		if i < m || seen[key].at {
			members[key] = struct{}{}
		}
	}
	before := r.members.Load()
	r.members.Store(&members)
	for key := range members {
		if before == nil {
			c.engine.Enqueue(key)
		} else if _, was := (*before)[key]; !was {
			c.engine.Enqueue(key)
		}
	}
	ro := r.target.Rule.Rollout
	if rev.Phase != rollout.Progressing || ro == nil {
		return 0, nil
	}
	h := rollout.Health{Members: m, Check: true}
	for _, key := range ordered[:m] {
		if s := seen[key]; s.health != "" {
			h.Failing = append(h.Failing, key.Namespace+"/"+key.Name+": "+s.health)
		}
	}
	if len(h.Failing) == 0 {
		h.Check, h.CheckErr = healthy(ctx, r.target, ordered[:m])
	}
	now := time.Now()
	next, changed := rollout.Next(rev.State, policy(ro), h, now)
	if !changed || c.revs.DryRun {
		// A dry run takes no step: it shows the one the rollout is at.
		return rollout.Due(rev.State, policy(ro), now), nil
	}
	next.Steps = ro.Steps
	got, err := c.revs.Store.Update(ctx, rev, rev.Number, next)
	switch {
	case apierrors.IsConflict(err):
		return synced, nil // changed elsewhere: the cache shows it soon
	case err != nil:
		return 0, fmt.Errorf("write the rollout's state: %w", err)
	}
	c.follow(ctx, r, rev, got)
	c.changed(ctx, rev, got)
	if got.Phase == rollout.Progressing && got.Step != rev.Step {
		// The next step's parents move now.
		return c.step(ctx, r, got)
	}
	return rollout.Due(got.State, policy(ro), now), nil
}

// complete ends a rollout whose every parent is at the target: the stable version's
// watches go, and the parents the steps did not reach (created since the last look)
// move now.
func (c *Controller) complete(ctx context.Context, r *Rule, stable *watch.Rule, rev *rollout.Revision) {
	c.engine.StopStable(r, stable)
	r.forget()
	members := r.members.Load()
	for _, key := range r.target.ParentKeys() {
		if members == nil {
			c.engine.Enqueue(key)
		} else if _, ok := (*members)[key]; !ok {
			c.engine.Enqueue(key)
		}
	}
	klog.FromContext(ctx).Info("Rollout complete", "number", rev.Number)
}

// follow makes after the rule's revision as last seen, and queues the parents a change
// of phase moves: when the rollout rolled back, those at the new revision (complete
// queues the others when it stops the stable version).
func (c *Controller) follow(ctx context.Context, r *Rule, before, after *rollout.Revision) {
	r.rev.Store(after)
	if after.Phase != rollout.RolledBack || before.Phase == rollout.RolledBack {
		return
	}
	klog.FromContext(ctx).Info("Rollout rolled back", "number", after.Number, "message", after.Message)
	// The parents at the new revision go back: the members of the steps taken, and any
	// other the last look saw there.
	moved := r.atTarget()
	if m := r.members.Load(); m != nil {
		maps.Copy(moved, *m)
	} else if len(moved) == 0 {
		for _, key := range r.target.ParentKeys() {
			moved[key] = struct{}{} // never looked: every parent, to be sure
		}
	}
	for key := range moved {
		c.engine.Enqueue(key)
	}
}

// changed logs and records what this replica's write of a rollout's state did.
func (c *Controller) changed(ctx context.Context, before, after *rollout.Revision) {
	logger := klog.FromContext(ctx)
	switch {
	case after.Phase == rollout.Paused || after.Phase == rollout.RolledBack:
		logger.Error(nil, "Rollout step failed", "phase", after.Phase, "step", after.Step, "message", after.Message)
		c.revs.event(after, corev1.EventTypeWarning, "RolloutStepFailed", after.Message)
	case after.Phase == rollout.Complete:
		c.revs.event(after, corev1.EventTypeNormal, "RolloutComplete", fmt.Sprintf("every parent is at revision %d (%s)", after.Number, after.Hash))
	case after.Step != before.Step:
		logger.Info("Rollout step taken", "step", after.Step, "of", len(after.Steps))
		c.revs.event(after, corev1.EventTypeNormal, "RolloutStep", fmt.Sprintf("step %d of %d (%g%%) begins", after.Step, len(after.Steps), after.Steps[after.Step-1]))
	}
}

// policy is a rule's rollout policy as package rollout reads it.
func policy(ro *rules.Rollout) rollout.Policy {
	return rollout.Policy{Steps: ro.Steps, Pause: ro.Pause, ProgressDeadline: ro.ProgressDeadline, Rollback: ro.OnFailure == rules.OnFailureRollback}
}
