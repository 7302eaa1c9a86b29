package reconcile

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/rules"
)

// When a parent is deleted, kubecel deletes its children itself, as soon as it sees the
// parent go (or, for a foreground deletion, start terminating), instead of leaving them
// to kube-controller-manager's garbage collector, which works at its own client rate.
// The garbage collector stays the safety net: when kubecel is down, the owner
// references still take the children away.
//
// Only children that are still the parent's are deleted: a child whose cached copy
// carries an owner reference to the parent's UID, or, for a child that garbage
// collection cannot follow (in another namespace, or cluster-scoped), the parent's UID
// label. Each delete carries preconditions on the child's UID and resourceVersion, so a
// child that the garbage collector has just orphaned (kubectl delete --cascade=orphan
// removes the owner references first) or that someone deleted and created again is never
// touched: a conflict means the cache is behind, and the parent's key is looked at
// again once it has caught up. Deletes run in the worker that handles the parent's key,
// under the controller's client rate limit, so they share the workers with the
// reconciles of live parents instead of taking them over: a batch of deletes
// (Options.MaxWrites) per turn.

// Finalizers Kubernetes puts on an object deleted with a propagation policy.
const (
	finalizerOrphan     = metav1.FinalizerOrphanDependents
	finalizerForeground = metav1.FinalizerDeleteDependents
)

// teardownParallel bounds the deletes sent at once for one parent. With 16 workers
// tearing down large parents, 4 each kept the API server as busy as 8 did (the same
// teardown time in the noisy-neighbour bench) and let other namespaces' writes through
// sooner (docs/benchmarks.md, *Noisy neighbour*).
const teardownParallel = 4

// parentDeleted records a parent its rule's informer saw deleted, for its teardown.
func (d *deletion) parentDeleted(key watch.Key, uid types.UID, sure, orphan bool) {
	d.memory.addGone(key, &goneParent{uid: uid, sure: sure, orphan: orphan})
}

// replaced tears down the children of an earlier parent of key, seen deleted and not
// torn down yet, when parent is a new one of the same name: the old one's children go
// first. It asks for nothing (a zero Result) when there is no such parent or its
// children are all gone.
func (d *deletion) replaced(ctx context.Context, st *watch.Rule, key watch.Key, parent *unstructured.Unstructured) (Result, error) {
	g, known := d.memory.gone(key)
	if !known || !g.done.IsZero() || g.uid == parent.GetUID() {
		return Result{}, nil
	}
	return d.teardown(ctx, st, key, g.uid, g.orphan)
}

// teardown deletes the children of the parent with key and UID uid (gone, or being
// deleted in the foreground) that are still that parent's.
func (d *deletion) teardown(ctx context.Context, st *watch.Rule, key watch.Key, uid types.UID, orphan bool) (Result, error) {
	if orphan {
		// Deleted with --cascade=orphan: the children stay, without their owner
		// references (the garbage collector removes them).
		d.memory.finishGone(key, uid)
		return Result{}, nil
	}
	var doomed []*informers.Object
	for _, child := range st.OwnedChildren(string(uid)) {
		if len(doomed) > d.batch {
			break // enough to know there is more than a batch
		}
		if child.GetDeletionTimestamp() != nil || d.deleting.pending(child.GetUID()) {
			continue
		}
		mine, err := stillChildOf(st, key, uid, child)
		if err != nil {
			return Result{}, err
		}
		if mine {
			doomed = append(doomed, child)
		}
	}
	more := len(doomed) > d.batch
	if more {
		doomed = doomed[:d.batch] // the rest on the parent's next turn
	}
	var mu sync.Mutex
	var errs []error
	again := false
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(teardownParallel)
	for _, child := range doomed {
		g.Go(func() error {
			var err error
			counter := d.metrics.Teardowns
			if keeps(st, child.Child(), true) {
				err, counter = d.releaseChild(gctx, st, child), d.metrics.Releases
			} else {
				err = d.sendDelete(gctx, st, child, true)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case apierrors.IsConflict(err):
				again = true // changed since the cache saw it: look again once it has caught up
			case err != nil:
				errs = append(errs, err)
			default:
				counter.WithLabelValues(st.Rule.Name).Inc()
			}
			return nil
		})
	}
	_ = g.Wait()
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	if again {
		return Result{RequeueAfter: time.Second}, nil
	}
	if more {
		return Result{Yield: true}, nil
	}
	if len(doomed) > 0 {
		klog.FromContext(ctx).Info("Deleted children of deleted parent", "parentUID", string(uid), "children", len(doomed), "dryRun", d.dryRun)
	}
	if d.unseen(st, uid) {
		// A child we made is not in the caches yet: its event requeues the parent.
		return Result{RequeueAfter: time.Second}, nil
	}
	d.memory.finishGone(key, uid)
	return Result{}, nil
}

// stillChildOf reports whether the cached child still belongs to the parent with key and
// UID uid: an owner reference to that UID, or, where garbage collection cannot follow
// the child (Shape gives it no owner reference), the parent's UID label, which the
// caller has checked.
func stillChildOf(st *watch.Rule, key watch.Key, uid types.UID, child *informers.Object) (bool, error) {
	ck := st.Children[child.GetObjectKind().GroupVersionKind().GroupKind()]
	if ck == nil {
		return false, nil
	}
	ref := rules.ParentRef{Namespace: key.Namespace, Namespaced: st.ParentKind.Namespaced}
	if !st.Rule.GarbageCollected(ref, child.Child(), child.GetNamespace(), ck.Namespaced) {
		return true, nil
	}
	obj, err := child.Decode()
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(obj.GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.UID == uid }), nil
}

// hasFinalizer reports whether parent carries finalizer f.
func hasFinalizer(parent *unstructured.Unstructured, f string) bool {
	return slices.Contains(parent.GetFinalizers(), f)
}
