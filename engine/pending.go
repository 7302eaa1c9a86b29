package engine

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
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
func (t *ruleTable) setPending(ctx context.Context, r *rules.Rule, err error) {
	var forbidden *forbiddenError
	p := &pendingRule{rule: r, reason: err.Error(), next: time.Now().Add(t.opts.PendingRetry)}
	kind := contract.PendingError
	switch {
	case errors.As(err, &forbidden):
		p.forbidden, p.next, kind = true, time.Now().Add(forbiddenRetry), contract.PendingForbidden
	case meta.IsNoMatchError(err):
		kind = contract.PendingNotServed
	}
	old := t.pending[r.Name]
	t.pending[r.Name] = p
	if old != nil && old.reason == p.reason && old.rule == r {
		return
	}
	klog.FromContext(ctx).Info("Rule is not running", "rule", r.Name, "reason", kind, "message", p.reason)
	t.metrics.RuleProblems.WithLabelValues(r.Name, kind).Inc()
	if t.opts.Notify != nil {
		t.opts.Notify(ctx, r.Name, kind, p.reason)
	}
}

// watchKinds retries pending rules every PendingRetry, and re-checks all rules at once
// when a CRD appears or disappears: a running rule whose kinds are no longer served
// stops and waits again.
func (t *ruleTable) watchKinds(ctx context.Context, meta metadata.Interface) {
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
	tick := time.NewTicker(t.opts.PendingRetry)
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
			t.retryPending(ctx, false)
		case <-second.C:
			if time.Now().Before(recheckUntil) {
				t.retryPending(ctx, true)
			}
		case <-changed:
			recheckUntil = time.Now().Add(crdRecheckWindow)
			t.retryPending(ctx, true)
		}
	}
}

// crdRecheckWindow is how long after a CRD event the rules are re-checked every second.
const crdRecheckWindow = 30 * time.Second

// retryPending tries to start the waiting rules; with recheck it also stops the running
// rules whose kinds are gone.
func (t *ruleTable) retryPending(ctx context.Context, recheck bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !recheck && len(t.pending) == 0 {
		return
	}
	t.watcher.Reset()
	if recheck {
		for name, st := range t.running {
			if err := t.watcher.StillServed(st); err != nil {
				klog.FromContext(ctx).Info("Stopping rule: its kinds are no longer served", "rule", name, "reason", err.Error())
				t.stopLocked(st)
				t.setPending(ctx, st.Rule, err)
			}
		}
	}
	now := time.Now()
	for name, p := range t.pending {
		if !recheck && now.Before(p.next) {
			continue
		}
		if err := t.startLocked(ctx, p.rule, nil); err != nil {
			t.setPending(ctx, p.rule, err)
			continue
		}
		delete(t.pending, name)
		enqueueAll(t.enqueue, t.running[name])
	}
	t.updateGauges()
}

// releaseParents removes the rule's finalizer from the parents of a rule that was
// deliberately removed from the rules, so they can still be deleted. Their children
// stay where they are. It runs in the background; failures are logged.
func (t *ruleTable) releaseParents(ctx context.Context, st *watch.Rule) {
	// The cache stays readable after the rule stopped; reconciles that entered before
	// may still add the finalizer, so the parents are picked after they end.
	parents, err := st.Parents("")
	if err != nil {
		klog.FromContext(ctx).Error(err, "Cannot release the parents of a removed rule", "rule", st.Rule.Name)
		return
	}
	go func() {
		st.Drain()
		logger := klog.FromContext(ctx)
		for _, p := range parents {
			key := watch.KeyFor(st.Rule.Name, p)
			if !t.reconciler.MayHold(st, p) || !t.gate.serves(key) {
				continue
			}
			end, ok := t.gate.begin(key)
			if !ok {
				continue // moved to another replica since: not this one's to write
			}
			err := t.reconciler.ReleaseParent(ctx, st, p)
			end()
			if err != nil {
				logger.Error(err, "Cannot release parent of a removed rule", "rule", st.Rule.Name, "parent", p.GetNamespace()+"/"+p.GetName())
			}
		}
	}()
}
