package engine

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/access"
	"github.com/kubecel/kubecel/engine/internal/apis"
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
	// wouldCreate: in a dry run, the rule's api would create its CRD, so it has no
	// parents yet (plan skips it).
	wouldCreate bool
	next        time.Time
}

// forbiddenRetry is how long a rule that lacks permissions waits before it is checked
// again: access reviews are requests too, and RBAC rarely changes by the second.
const forbiddenRetry = time.Minute

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// setPending records why a rule does not run and reports it once per reason.
// The caller holds l.mu.
func (l *lifecycle) setPending(ctx context.Context, r *rules.Rule, err error) {
	var forbidden *access.ForbiddenError
	var refused *apis.RefusedError
	p := &pendingRule{rule: r, reason: err.Error(), next: time.Now().Add(l.opts.PendingRetry)}
	kind := contract.PendingError
	switch {
	case errors.As(err, &forbidden):
		p.forbidden, p.next, kind = true, time.Now().Add(forbiddenRetry), contract.PendingForbidden
	case errors.As(err, &refused):
		// Counting the stored objects again is a list of them all: not every few seconds.
		// A change of the CRD re-checks at once (watchKinds).
		p.next, kind = time.Now().Add(forbiddenRetry), contract.PendingAPIRefused
	case errors.Is(err, errWouldCreate):
		p.wouldCreate, kind = true, contract.PendingNotServed
	case meta.IsNoMatchError(err):
		kind = contract.PendingNotServed
	}
	old := l.pending[r.Name]
	l.pending[r.Name] = p
	if old != nil && old.reason == p.reason && old.rule == r {
		return
	}
	klog.FromContext(ctx).Info("Rule is not running", "rule", r.Name, "reason", kind, "message", p.reason)
	l.metrics.RuleProblems.WithLabelValues(r.Name, kind).Inc()
	if l.opts.Notify != nil {
		l.opts.Notify(ctx, r.Name, kind, p.reason)
	}
}

// watchKinds retries pending rules every PendingRetry, and re-checks all rules at once
// when a CRD appears or disappears: a running rule whose kinds are no longer served
// stops and waits again.
func (l *lifecycle) watchKinds(ctx context.Context, meta metadata.Interface) {
	changed := make(chan struct{}, 1)
	signal := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if meta != nil {
		inf := metadatainformer.NewFilteredMetadataInformer(meta, crdGVR, "", 0, cache.Indexers{}, nil).Informer()
		_ = inf.SetTransform(dropManagedFields) // fails only on a started informer
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			// The CRDs that exist when the controller starts are no change: the rules
			// were just started against them. Re-checking every rule each second for
			// the window after them cost a controller with a thousand rules a third
			// of its CPU while it started.
			AddFunc: func(obj any, initial bool) {
				if !initial {
					signal(obj)
				}
			},
			DeleteFunc: signal,
			UpdateFunc: func(_, n any) { signal(n) }, // e.g. a new version becomes served
		})
		go inf.RunWithContext(ctx)
	}
	tick := time.NewTicker(l.opts.PendingRetry)
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
			l.retryPending(ctx, false)
		case <-second.C:
			if time.Now().Before(recheckUntil) {
				l.retryPending(ctx, true)
			}
		case <-changed:
			recheckUntil = time.Now().Add(crdRecheckWindow)
			l.retryPending(ctx, true)
		}
	}
}

// crdRecheckWindow is how long after a CRD event the rules are re-checked every second.
const crdRecheckWindow = 30 * time.Second

// retryPending tries to start the waiting rules; with recheck it also stops the running
// rules whose kinds are gone. The rules due start at once (startAll); its discovery
// requests and access reviews are made under l.mu alone: the workers keep reading the
// published view meanwhile.
func (l *lifecycle) retryPending(ctx context.Context, recheck bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !recheck && len(l.pending) == 0 {
		return
	}
	l.watcher.Reset()
	var stopped []*runningRule
	if recheck {
		for _, name := range slices.Sorted(maps.Keys(l.running)) {
			rr := l.running[name]
			if err := l.watcher.StillServed(rr.st); err != nil {
				klog.FromContext(ctx).Info("Stopping rule: its kinds are no longer served", "rule", name, "reason", err.Error())
				delete(l.running, name)
				stopped = append(stopped, rr)
				if l.pending[name] == nil { // a newer version may wait already
					l.setPending(ctx, rr.st.Rule, err)
				}
			}
		}
	}
	now := time.Now()
	var due []*rules.Rule
	for _, p := range l.pending {
		if recheck || !now.Before(p.next) {
			due = append(due, p.rule)
		}
	}
	// A version that waits while an older one runs (keepsOld) replaces it.
	jobs := startJobs(due, func(name string) *runningRule { return l.running[name] })
	l.startAll(ctx, jobs, nil, nil)
	var started []*runningRule
	for _, j := range jobs {
		if j.err != nil {
			l.setPending(ctx, j.rule, j.err)
			continue
		}
		name := j.rule.Name
		delete(l.pending, name)
		l.running[name] = j.next
		started = append(started, j.next)
		if j.old != nil {
			stopped = append(stopped, j.old)
		}
	}
	l.publish()
	for _, rr := range stopped {
		l.stopVersions(rr)
	}
	for _, rr := range started {
		enqueueAll(l.enqueue, rr.st)
	}
	l.notice(started...)
}

// releaseParents removes the rule's finalizer from the parents of a rule that was
// deliberately removed from the rules, so they can still be deleted. Their children
// stay where they are. It runs in the background; failures are logged.
func (l *lifecycle) releaseParents(ctx context.Context, st *watch.Rule) {
	// The cache stays readable after the rule stopped; reconciles that entered before
	// may still add the finalizer, so the parents are picked after they end. Under
	// sharding the cache holds whole only the parents of the buckets this replica
	// served; the others are the other replicas' to release.
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
			if !l.reconciler.MayHold(st, p) || !l.gate.serves(key) {
				continue
			}
			end, ok := l.gate.begin(key)
			if !ok {
				continue // moved to another replica since: not this one's to write
			}
			err := l.reconciler.ReleaseParent(ctx, st, p)
			end()
			if err != nil {
				logger.Error(err, "Cannot release parent of a removed rule", "rule", st.Rule.Name, "parent", p.GetNamespace()+"/"+p.GetName())
			}
		}
	}()
}

// dropManagedFields is the transform of the caches that never read managedFields (the
// CRDs' metadata, the stored revisions): a thousand CRDs' entries, each as large as its
// schema's field set, and a thousand revisions' entries were kept for nothing.
func dropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
