package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/kubecel/kubecel/rules"
)

// This file measures the API server's limits for exactly the work the controller does,
// so that convergence and deletion are compared on equal footing:
//
//   - the same-writes limit: per parent, the writes the controller and the bench make
//     together (create the parent, apply its three children as the controller shapes
//     them, apply its status), sent by the bench's parallel clients;
//   - the direct-delete limit: those same children and then their parent deleted by the
//     bench's clients, the deletes that deleting the parents takes.
//
// Both run in a namespace of their own before the controller starts, and the namespace
// is deleted (and gone) before the controller's phases begin: the controller then meets
// the same stored state the limits met. The API server's cost per write grows with
// what it stores, so comparing a limit measured on an empty server with a controller
// measured on a full one would flatter the limit.

// limits measures both limits, under a tracker of the bench's own (as the controller's
// phases run under one), and leaves their namespace deleted.
func (b *bench) limits(ctx context.Context, res *results) error {
	// The namespace is there at the first run, and made again for later pairs.
	_, err := b.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: limitNS}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", limitNS, err)
	}
	watch, err := startTracker(ctx, b.kube, b.clients[0], limitNS, b.cfg.n)
	if err != nil {
		return err
	}
	var written [][]*unstructured.Unstructured
	cpu0, server0 := b.sampleCPU(), b.serverSample(ctx)
	if res.limit, written, err = b.sameWrites(ctx); err != nil {
		watch.stop()
		return fmt.Errorf("same-writes limit: %w", err)
	}
	res.limitCPU = b.sampleCPU().minus(cpu0)
	logf("same-writes limit: machine CPU %s", res.limitCPU)
	logf("same-writes limit: kube-apiserver served %s", b.serverSample(ctx).minus(server0))
	if !b.cfg.skipDelete {
		if res.deleteLimit, err = b.directDelete(ctx, written); err != nil {
			watch.stop()
			return fmt.Errorf("direct-delete limit: %w", err)
		}
	}
	watch.stop()
	return b.clearNamespace(ctx, limitNS)
}

// limitNS holds the parents and children of the same-writes limit. The bench's rule
// selects only benchNS, so nothing else acts on it.
const limitNS = "bench-limit"

// sameWrites sends, for each of N parents, the writes the controller's convergence
// needs, parent by parent in parallel, and returns the wall time and the children it
// created, per parent: its children, then the parent (for the direct-delete limit). Each
// parent's writes are in the controller's order: the status reads the Service's
// clusterIP, so it follows the children.
func (b *bench) sameWrites(ctx context.Context) (time.Duration, [][]*unstructured.Unstructured, error) {
	rs, err := rules.Load(rulesYAML, rules.Options{})
	if err != nil {
		return 0, nil, fmt.Errorf("testdata/rules.yaml: %w", err)
	}
	rule := rs.Rules[0]
	written := make([][]*unstructured.Unstructured, b.cfg.n)
	logf("same-writes limit: %d parents, %d writes each, %d clients", b.cfg.n, 2+len(rule.Children), len(b.clients))
	start := time.Now()
	err = b.parallel(ctx, b.cfg.n, func(ctx context.Context, c dynamic.Interface, i int) error {
		var err error
		written[i], err = writeLikeController(ctx, c, rule, newParent(limitNS, i))
		return err
	})
	took := time.Since(start)
	if err != nil {
		return 0, nil, err
	}
	logf("same-writes limit: %s (%.0f writes/s)", took.Round(time.Millisecond), float64(b.cfg.n*(2+len(rule.Children)))/took.Seconds())
	return took, written, nil
}

// writeLikeController creates parent and writes what the controller would for it. It
// returns the children, then the parent, as the server returned them.
func writeLikeController(ctx context.Context, c dynamic.Interface, rule *rules.Rule, parent *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	created, err := c.Resource(webapps).Namespace(parent.GetNamespace()).Create(ctx, parent, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	ref := rules.ParentRefOf(created.Object, webapps.GroupResource(), true)
	res, err := rule.EvaluateWithRefs(ctx, created.Object, rules.Observed{}, settingsSource{})
	if err != nil {
		return nil, err
	}
	var applied []*unstructured.Unstructured
	var observed []map[string]any
	shaped, err := rule.Shape(nil, ref, func(string, string) (bool, error) { return true, nil }, res.Children...)
	if err != nil {
		return nil, err
	}
	for _, d := range shaped {
		u := &unstructured.Unstructured{Object: d.Object}
		live, err := c.Resource(childGVRs[u.GetKind()]).Namespace(u.GetNamespace()).Apply(ctx, u.GetName(), u,
			metav1.ApplyOptions{FieldManager: userAgent, Force: true})
		if err != nil {
			return applied, err
		}
		applied = append(applied, live)
		observed = append(observed, live.Object)
	}
	// The controller evaluates again once the children exist: the status reads them.
	res, err = rule.EvaluateWithRefs(ctx, created.Object, rule.Observe(observed), settingsSource{})
	if err != nil {
		return applied, err
	}
	status := map[string]any{"observedGeneration": created.GetGeneration()}
	for k, v := range res.Status {
		status[k] = v
	}
	now := time.Now().UTC().Format(time.RFC3339)
	status["conditions"] = []any{
		condition("Ready", "Ready", "every child is ready", created.GetGeneration(), now),
		condition("Synced", "Synced", "children are applied", created.GetGeneration(), now),
	}
	patch := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": created.GetAPIVersion(), "kind": created.GetKind(),
		"metadata": map[string]any{"name": created.GetName(), "namespace": created.GetNamespace()},
		"status":   status,
	}}
	_, err = c.Resource(webapps).Namespace(created.GetNamespace()).ApplyStatus(ctx, created.GetName(), patch,
		metav1.ApplyOptions{FieldManager: userAgent, Force: true})
	return append(applied, created), err
}

func condition(typ, reason, message string, generation int64, now string) map[string]any {
	return map[string]any{
		"type": typ, "status": "True", "reason": reason, "message": message,
		"observedGeneration": generation, "lastTransitionTime": now,
	}
}

// directDelete sends the deletes that deleting the parents takes, with the bench's
// parallel clients: per parent, each child (with a UID precondition, as the
// controller's deletes carry) and then the parent itself, so that the garbage collector
// finds nothing to do. It returns the wall time. A delete returns once the object is
// gone (none of them has a finalizer).
func (b *bench) directDelete(ctx context.Context, written [][]*unstructured.Unstructured) (time.Duration, error) {
	total := 0
	for _, objs := range written {
		total += len(objs)
	}
	logf("direct-delete limit: deleting %d parents and children with %d clients", total, len(b.clients))
	start := time.Now()
	err := b.parallel(ctx, len(written), func(ctx context.Context, c dynamic.Interface, i int) error {
		for _, o := range written[i] {
			gvr, ok := childGVRs[o.GetKind()]
			if !ok {
				gvr = webapps
			}
			uid := o.GetUID()
			err := c.Resource(gvr).Namespace(o.GetNamespace()).Delete(ctx, o.GetName(),
				metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil {
				return err
			}
		}
		return nil
	})
	took := time.Since(start)
	if err != nil {
		return 0, err
	}
	logf("direct-delete limit: %s (%.0f deletes/s)", took.Round(time.Millisecond), float64(total)/took.Seconds())
	return took, nil
}

// clearNamespace deletes namespace ns and waits until it is gone, so that the next
// phase starts on the stored state the previous one started on.
func (b *bench) clearNamespace(ctx context.Context, ns string) error {
	if err := b.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, b.cfg.timeout, true, func(ctx context.Context) (bool, error) {
		_, err := b.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("namespace %s not deleted: %w", ns, err)
	}
	return nil
}
