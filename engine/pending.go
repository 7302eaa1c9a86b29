package engine

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/rules"
)

// A rule that cannot start waits: for its kinds to be served (a CRD not installed yet),
// or for the permissions it lacks. Waiting rules are retried; other rules run meanwhile.

// pendingRule is a rule that is not running, and why.
type pendingRule struct {
	rule      *rules.Rule
	reason    string
	forbidden bool
	next      time.Time
}

// forbiddenRetry is how long a rule that lacks permissions waits before it is checked
// again: access reviews are requests too, and RBAC rarely changes by the second.
const forbiddenRetry = time.Minute

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// setPending records why a rule does not run and reports it once per reason.
func (c *Controller) setPending(ctx context.Context, r *rules.Rule, err error) {
	var forbidden *forbiddenError
	p := &pendingRule{rule: r, reason: err.Error(), next: time.Now().Add(c.opts.PendingRetry)}
	kind := rules.PendingError
	switch {
	case errors.As(err, &forbidden):
		p.forbidden, p.next, kind = true, time.Now().Add(forbiddenRetry), rules.PendingForbidden
	case meta.IsNoMatchError(err):
		kind = rules.PendingNotServed
	}
	old := c.pending[r.Name]
	c.pending[r.Name] = p
	if old != nil && old.reason == p.reason && old.rule == r {
		return
	}
	klog.FromContext(ctx).Info("Rule is not running", "rule", r.Name, "reason", kind, "message", p.reason)
	c.metrics.RuleProblems.WithLabelValues(r.Name, kind).Inc()
	if c.opts.Notify != nil {
		c.opts.Notify(ctx, r.Name, kind, p.reason)
	}
}

// watchKinds retries pending rules every PendingRetry, and re-checks all rules at once
// when a CRD appears or disappears: a running rule whose kinds are no longer served
// stops and waits again.
func (c *Controller) watchKinds(ctx context.Context, meta metadata.Interface) {
	changed := make(chan struct{}, 1)
	signal := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if meta != nil {
		inf := metadatainformer.NewFilteredMetadataInformer(meta, crdGVR, "", 0, cache.Indexers{}, nil).Informer()
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: signal, DeleteFunc: signal,
			UpdateFunc: func(_, n any) { signal(n) }, // e.g. a new version becomes served
		})
		go inf.RunWithContext(ctx)
	}
	tick := time.NewTicker(c.opts.PendingRetry)
	defer tick.Stop()
	// Discovery lags a CRD's deletion (the CRD lingers while its objects are removed),
	// so after a CRD event every rule is re-checked each second for a while, not once.
	second := time.NewTicker(time.Second)
	defer second.Stop()
	var recheckUntil time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			c.retryPending(ctx, false)
		case <-second.C:
			if time.Now().Before(recheckUntil) {
				c.retryPending(ctx, true)
			}
		case <-changed:
			recheckUntil = time.Now().Add(crdRecheckWindow)
			c.retryPending(ctx, true)
		}
	}
}

// crdRecheckWindow is how long after a CRD event the rules are re-checked every second.
const crdRecheckWindow = 30 * time.Second

// retryPending tries to start the waiting rules; with recheck it also stops the running
// rules whose kinds are gone.
func (c *Controller) retryPending(ctx context.Context, recheck bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !recheck && len(c.pending) == 0 {
		return
	}
	c.mapper.Reset()
	if recheck {
		for name, st := range c.rules {
			if err := c.stillServed(st); err != nil {
				klog.FromContext(ctx).Info("Stopping rule: its kinds are no longer served", "rule", name, "reason", err.Error())
				c.stopRule(st)
				delete(c.rules, name)
				c.setPending(ctx, st.rule, err)
			}
		}
	}
	now := time.Now()
	for name, p := range c.pending {
		if !recheck && now.Before(p.next) {
			continue
		}
		if err := c.startRuleLocked(ctx, p.rule, nil); err != nil {
			c.setPending(ctx, p.rule, err)
			continue
		}
		delete(c.pending, name)
		c.rules[name].enqueueAll(c.queue)
	}
	c.updateRuleGauges()
}

// stillServed reports an error when discovery no longer serves a kind the rule uses.
func (c *Controller) stillServed(st *ruleState) error {
	if _, err := c.kindForResource(st.parent.GVR); err != nil {
		return err
	}
	for _, ck := range st.children {
		if _, err := c.kindInfo(ck.GVK); err != nil {
			return err
		}
	}
	return nil
}

func (c *Controller) updateRuleGauges() {
	c.metrics.ActiveRules.Set(float64(len(c.rules)))
	c.metrics.PendingRules.Set(float64(len(c.pending)))
}

// releaseParents removes the rule's finalizer from the parents of a rule that was
// deliberately removed from the rules, so they can still be deleted. Their children
// stay where they are. It runs in the background; failures are logged.
func (c *Controller) releaseParents(ctx context.Context, st *ruleState) {
	var held []*unstructured.Unstructured
	for _, w := range st.parents {
		for _, o := range w.Informer.GetStore().List() {
			u, err := o.(*informers.Object).Decode()
			if err != nil {
				klog.FromContext(ctx).Error(err, "Cannot release parent of a removed rule", "rule", st.rule.Name)
				continue
			}
			if st.holds(u) && c.serves(u.GetNamespace(), u.GetName()) {
				held = append(held, u)
			}
		}
	}
	if len(held) == 0 {
		return
	}
	go func() {
		logger := klog.FromContext(ctx)
		for _, p := range held {
			end, ok := c.begin(p.GetNamespace(), p.GetName())
			if !ok {
				continue // moved to another replica since: not this one's to write
			}
			err := c.applyFinalizer(ctx, st, p, false)
			end()
			if err != nil {
				logger.Error(err, "Cannot release parent of a removed rule", "rule", st.rule.Name, "parent", p.GetNamespace()+"/"+p.GetName())
			}
		}
	}()
}
