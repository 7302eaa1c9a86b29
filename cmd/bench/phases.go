package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// baseline applies the children the rule computes for N parents directly, with the
// bench's parallel unthrottled clients, in a namespace of its own, and returns the wall
// time. The objects are the rule's own output with kubecel's labels and annotation, but
// a managed-by value the controller does not watch and no owner (there is no parent).
// The namespace is deleted afterwards so the controller starts on a quiet server.
func (b *bench) baseline(ctx context.Context) (time.Duration, error) {
	objs, err := renderChildren(ctx, baselineNS, b.cfg.n)
	if err != nil {
		return 0, err
	}
	logf("baseline: applying %d children with %d clients", len(objs), len(b.clients))
	start := time.Now()
	err = b.parallel(ctx, len(objs), func(ctx context.Context, c dynamic.Interface, i int) error {
		o := objs[i]
		_, err := c.Resource(childGVRs[o.GetKind()]).Namespace(baselineNS).Apply(ctx, o.GetName(), o,
			metav1.ApplyOptions{FieldManager: userAgent, Force: true})
		return err
	})
	took := time.Since(start)
	if err != nil {
		return 0, err
	}
	logf("baseline: %s (%.0f applies/s)", took.Round(time.Millisecond), float64(len(objs))/took.Seconds())
	if err := b.clearNamespace(ctx, baselineNS); err != nil {
		return 0, err
	}
	return took, nil
}

// renderChildren evaluates the bench's rule for N parents, offline, and returns the
// children as the controller would apply them in namespace ns.
func renderChildren(ctx context.Context, ns string, n int) ([]*unstructured.Unstructured, error) {
	rs, err := rules.Load(rulesYAML, rules.Options{})
	if err != nil {
		return nil, fmt.Errorf("testdata/rules.yaml: %w", err)
	}
	rule := rs.Rules[0]
	var out []*unstructured.Unstructured
	for i := range n {
		p := newParent(ns, i)
		p.SetUID(types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)))
		res, err := rule.EvaluateWithRefs(ctx, p.Object, rules.Observed{}, settingsSource{})
		if err != nil {
			return nil, err
		}
		for _, d := range res.Children {
			o := &unstructured.Unstructured{Object: d.Object}
			o.SetNamespace(ns)
			labels := o.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels[contract.LabelManagedBy] = "kubecel-baseline"
			labels[contract.LabelRule] = rule.Name
			labels[contract.LabelParentUID] = string(p.GetUID())
			labels[contract.LabelChild] = d.ID
			o.SetLabels(labels)
			ann := o.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[contract.AnnotationParent] = fmt.Sprintf("%s/%s/%s/%s", webapps.Group, webapps.Resource, ns, p.GetName())
			o.SetAnnotations(ann)
			out = append(out, o)
		}
	}
	return out, nil
}

// converge creates the N parents and waits until all of them are Ready and Synced and
// every child exists; it profiles the replicas meanwhile.
func (b *bench) converge(ctx context.Context, res *results) error {
	if err := b.audit.read(); err != nil {
		return err
	}
	writes0, agents0 := b.audit.snapshot(), b.audit.agentSnapshot()
	cpu0 := b.ctrls.cpuSeconds()
	work0 := b.ctrls.workStats(ctx)
	machine0, server0 := b.sampleCPU(), b.serverSample(ctx)
	stopProfiles := b.ctrls.profileCPU(ctx)
	logf("convergence: creating %d parents", b.cfg.n)
	start := time.Now()
	if err := b.createParents(ctx); err != nil {
		stopProfiles()
		return err
	}
	created := time.Since(start)
	err := waitFor(ctx, b.cfg.timeout, "convergence", b.watch.converged)
	res.converge = time.Since(start)
	res.convergeCPU = b.sampleCPU().minus(machine0)
	logf("convergence: kube-apiserver served %s", b.serverSample(ctx).minus(server0))
	work1 := b.ctrls.workStats(ctx)
	stopProfiles()
	if err != nil {
		return err
	}
	cpu1 := b.ctrls.cpuSeconds()
	for i, c := range b.ctrls {
		r := &res.replicas[i]
		r.cpuConverge = cpu1[i] - cpu0[i]
		r.converged = c.rss().current
		r.work = work1[i].minus(work0[i])
	}
	logf("convergence: %s (parents created in %s); machine CPU %s", res.converge.Round(time.Millisecond), created.Round(time.Millisecond), res.convergeCPU)
	b.ctrls.saveProfiles(ctx, "heap", "heap-converged.pprof")
	if err := b.quiet(ctx); err != nil {
		return err
	}
	res.writes = b.audit.snapshot().minus(writes0)
	res.agentWrites = b.audit.agentSnapshot().minus(agents0)
	return nil
}

// createParents creates the N parents in the bench namespace with the bench's clients.
func (b *bench) createParents(ctx context.Context) error {
	return b.parallel(ctx, b.cfg.n, func(ctx context.Context, c dynamic.Interface, i int) error {
		_, err := c.Resource(webapps).Namespace(benchNS).Create(ctx, newParent(benchNS, i), metav1.CreateOptions{})
		return err
	})
}

// quiet waits until the controller has sent no write for 3s, so that writes still in
// flight after convergence count towards it.
func (b *bench) quiet(ctx context.Context) error {
	last, since := -1, time.Now()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if err := b.audit.read(); err != nil {
			return err
		}
		if n := b.audit.snapshot().total(); n != last {
			last, since = n, time.Now()
		} else if time.Since(since) >= 3*time.Second {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	logf("the controller kept writing for 2 minutes after convergence")
	return nil
}

// steady forces a reconcile of every parent (a metadata-only change to each, which the
// controller sees as an update event), waits until the controller has reconciled them
// all, stays idle, and counts the controller's writes meanwhile.
func (b *bench) steady(ctx context.Context, res *results) error {
	if err := b.audit.read(); err != nil {
		return err
	}
	writes0, agents0 := b.audit.snapshot(), b.audit.agentSnapshot()
	reconciles0, err := b.ctrls.metric(ctx, "kubecel_reconcile_total")
	if err != nil {
		return err
	}
	logf("steady state: touching %d parents, then %s idle", b.cfg.n, b.cfg.idle)
	patch := []byte(`{"metadata":{"annotations":{"bench.kubecel.dev/resync":"1"}}}`)
	err = b.parallel(ctx, b.cfg.n, func(ctx context.Context, c dynamic.Interface, i int) error {
		_, err := c.Resource(webapps).Namespace(benchNS).Patch(ctx, parentName(i), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, b.cfg.timeout, true, func(ctx context.Context) (bool, error) {
		n, err := b.ctrls.metric(ctx, "kubecel_reconcile_total")
		res.steadyReconciles = int(n - reconciles0)
		return err == nil && res.steadyReconciles >= b.cfg.n, nil
	})
	if err != nil {
		return fmt.Errorf("the controller reconciled %d of %d touched parents: %w", res.steadyReconciles, b.cfg.n, err)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(b.cfg.idle):
	}
	if err := b.audit.read(); err != nil {
		return err
	}
	res.steadyWrites = b.audit.snapshot().minus(writes0)
	res.steadyAgents = b.audit.agentSnapshot().minus(agents0)
	for i, c := range b.ctrls {
		r := &res.replicas[i]
		settled := c.rss()
		r.settled, r.settledAnon = settled.current, settled.anon
		if b.cfg.sharding {
			if r.shard, err = c.metricValues(ctx, shardMetrics...); err != nil {
				logf("%s: shard metrics: %v", c.name, err)
			}
		}
	}
	b.ctrls.saveProfiles(ctx, "heap", "heap-settled.pprof")
	b.ctrls.saveMetrics(ctx, "metrics-settled.txt")
	for _, r := range res.replicas {
		logf("steady state: %s settled RSS %.1f MB (anonymous %.1f MB)", r.name, mb(r.settled), mb(r.settledAnon))
	}
	logf("steady state: %d writes", res.steadyWrites.total())
	return nil
}

// update patches every parent's image and waits until every child shows the new one.
func (b *bench) update(ctx context.Context) (time.Duration, error) {
	logf("update: patching %d parents", b.cfg.n)
	patch := []byte(fmt.Sprintf(`{"spec":{"image":%q}}`, image2))
	start := time.Now()
	err := b.parallel(ctx, b.cfg.n, func(ctx context.Context, c dynamic.Interface, i int) error {
		_, err := c.Resource(webapps).Namespace(benchNS).Patch(ctx, parentName(i), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return 0, err
	}
	err = waitFor(ctx, b.cfg.timeout, "update", func() (bool, string) { return b.watch.updated(image2) })
	took := time.Since(start)
	logf("update: %s", took.Round(time.Millisecond))
	return took, err
}

// deletion deletes every parent and waits until every child is gone (kubecel deletes
// them as it sees each parent go; the garbage collector, following the owner
// references, is the safety net).
func (b *bench) deletion(ctx context.Context) (time.Duration, error) {
	logf("deletion: deleting %d parents", b.cfg.n)
	start := time.Now()
	err := b.parallel(ctx, b.cfg.n, func(ctx context.Context, c dynamic.Interface, i int) error {
		return c.Resource(webapps).Namespace(benchNS).Delete(ctx, parentName(i), metav1.DeleteOptions{})
	})
	if err != nil {
		return 0, err
	}
	err = waitFor(ctx, b.cfg.timeout, "deletion", b.watch.gone)
	took := time.Since(start)
	logf("deletion: %s", took.Round(time.Millisecond))
	return took, err
}
