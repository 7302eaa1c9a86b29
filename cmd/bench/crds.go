package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// The --crds K phase (issues 39 and 42), alone on the bench's control plane with a
// controller of its own. It installs K CRDs and the rollout rule's CRD (crdsgen.go),
// creates their parents (K + 20), writes the rules (K + 2 rules: the late rule's CRD is
// not there yet, so that rule waits), and only then starts the controller, as a restart
// or a failover meets them. It measures from the process start:
//
//  1. until every rule whose CRD exists runs (kubecel_active_rules reaches K + 1);
//  2. until every parent is converged (Ready and Synced for its generation, its status
//     written, its ConfigMap and Service there), and the controller's writes per parent
//     until it sent nothing for 3 s;
//  3. writes at rest: every parent touched (an annotation), and after the controller
//     reconciled them all, --idle of nothing; the RSS then is the settled one;
//  4. with reconciles going on (load: an annotation patch of one measured parent after
//     another, loadRate a second, which makes a reconcile that writes nothing), three
//     events in turn, each read against kubecel_reconcile_lock_wait_seconds before and
//     after (lockwait.go, crdslocks.go): the late CRD appears; a rules reload that edits
//     one measured rule (timed until its parent shows the edit; the writes to every
//     other rule's parents and children counted); an edit of the rollout rule, which
//     takes its steps.

// defaultMaxRules is kubecel run's default --max-rules-per-source.
const defaultMaxRules = 1000

// rulesPoll is how often the start reads the controller's count of running rules.
const rulesPoll = 200 * time.Millisecond

// crdsPhase is the running --crds phase.
type crdsPhase struct {
	b         *bench
	k         int
	kinds     []crdKind // the K measured kinds, then the rollout rule's and the late one's
	rulesPath string
	// edits are the edit values of the rules file as last written, by rule.
	edits   map[string]string
	ctrl    *controller
	w       *crdsWatch
	reads   *readWatch // of the rules file
	crds    apiextensions.Interface
	timeout time.Duration
	res     *crdsResult
}

// runCRDs runs the phase and returns its figures.
func runCRDs(ctx context.Context, b *bench, k int) (*crdsResult, error) {
	cfg := rest.CopyConfig(b.cp.Config)
	cfg.UserAgent = userAgent
	cfg.QPS, cfg.Burst = -1, 0
	crds, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	p := &crdsPhase{b: b, k: k, kinds: crdKinds(k), rulesPath: filepath.Join(b.cfg.dir, "rules.yaml"), edits: map[string]string{},
		crds: crds, timeout: b.cfg.timeout, res: &crdsResult{k: k}}
	defer func() {
		if p.w != nil {
			p.w.stop()
		}
		if p.reads != nil {
			p.reads.close()
		}
	}()
	for _, step := range []struct {
		name string
		run  func(context.Context) error
	}{{"install", p.install}, {"start", p.start}, {"steady state", p.steady}, {"lock waits", p.locks}} {
		if err := step.run(ctx); err != nil {
			return nil, fmt.Errorf("crds: %s: %w", step.name, err)
		}
	}
	p.res.rssPeak = p.ctrl.rss().peak
	p.res.cpuTotal = p.ctrl.cpuSeconds()
	b.ctrls.saveMetrics(ctx, "metrics-end.txt")
	return p.res, nil
}

// running are the K measured kinds and the rollout rule's: those whose CRDs exist when
// the controller starts.
func (p *crdsPhase) running() []crdKind { return p.kinds[:p.k+1] }

// late is the kind whose CRD appears during the phase.
func (p *crdsPhase) late() crdKind { return p.kinds[p.k+1] }

// install creates the CRDs but the late one, waits until they are served, starts the
// bench's watches of them, creates their parents and writes the rules file.
func (p *crdsPhase) install(ctx context.Context) error {
	start := time.Now()
	kinds := p.running()
	logf("crds: installing %d CRDs", len(kinds))
	if err := p.b.parallel(ctx, len(kinds), func(ctx context.Context, _ dynamic.Interface, i int) error {
		return p.createCRD(ctx, kinds[i])
	}); err != nil {
		return err
	}
	if err := p.waitEstablished(ctx, kinds); err != nil {
		return err
	}
	logf("crds: %d CRDs established in %s", len(kinds), secs(time.Since(start)))
	w, err := startCRDsWatch(ctx, p.b.kube, p.b.clients[0])
	if err != nil {
		return err
	}
	p.w = w
	if err := w.watch(kinds); err != nil {
		return err
	}
	var all []parentRef
	for _, k := range kinds {
		for j := range k.parents {
			all = append(all, parentRef{k, j})
		}
	}
	p.res.parents = len(all)
	if err := p.b.parallel(ctx, len(all), func(ctx context.Context, c dynamic.Interface, i int) error {
		r := all[i]
		_, err := c.Resource(r.kind.gvr()).Namespace(benchNS).Create(ctx, r.kind.parent(benchNS, r.j), metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	logf("crds: %d parents created", len(all))
	if err := os.WriteFile(p.rulesPath, crdRules(p.kinds, p.edits), 0o644); err != nil {
		return err
	}
	p.reads, err = watchReads(p.rulesPath)
	return err
}

// parentRef is parent j of a kind.
type parentRef struct {
	kind crdKind
	j    int
}

func (p *crdsPhase) createCRD(ctx context.Context, k crdKind) error {
	_, err := p.crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, k.crd(), metav1.CreateOptions{})
	return err
}

// waitEstablished waits until every kind's CRD is Established.
func (p *crdsPhase) waitEstablished(ctx context.Context, kinds []crdKind) error {
	want := map[string]bool{}
	for _, k := range kinds {
		want[k.plural+"."+crdsGroup] = true
	}
	n := 0
	// Once a second: a list of a thousand CRDs is megabytes for the API server to send.
	err := wait.PollUntilContextTimeout(ctx, time.Second, p.timeout, true, func(ctx context.Context) (bool, error) {
		list, err := p.crds.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		n = 0
		for _, crd := range list.Items {
			for _, c := range crd.Status.Conditions {
				if want[crd.Name] && c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					n++
				}
			}
		}
		return n == len(want), nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d CRDs established: %w", n, len(want), err)
	}
	return nil
}

// start starts the controller and times it until every rule whose CRD exists runs and
// every parent is converged; it counts the controller's writes until it is quiet.
func (p *crdsPhase) start(ctx context.Context) error {
	b := p.b
	if err := b.audit.read(); err != nil {
		return err
	}
	writes0, names0 := b.audit.snapshot(), b.audit.nameSnapshot()
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	cfg := b.cfg
	cfg.sharding = false
	if cfg.restricted {
		// Before the clock starts: an installation's roles exist before it runs.
		if err := b.restrict(ctx, p.rulesPath, max(len(p.kinds), defaultMaxRules), p.kinds[0].gvr()); err != nil {
			return err
		}
	}
	cpu0 := b.sampleCPU()
	started := time.Now()
	args := cfg.runArgs(p.rulesPath, b.cp.Kubeconfig)
	if n := len(p.kinds); n > defaultMaxRules {
		// The rules file holds K + 2 rules, over kubecel run's default limit at K=1,000.
		args = append(args, "--max-rules-per-source="+strconv.Itoa(n))
	}
	if cfg.restricted {
		args = append(args, restrictedArgs()...)
	}
	ctrl, err := startProcess(cfg, "crds", b.cfg.dir, args, [3]int{ports[0], ports[1], ports[2]})
	if err != nil {
		return err
	}
	p.ctrl, b.ctrls = ctrl, fleet{ctrl}
	rules := p.k + 1
	rulesDone, convergedDone := false, false
	var lastScrape time.Time
	err = waitFor(ctx, p.timeout, "crds start", func() (bool, string) {
		select {
		case <-ctrl.done:
			return false, fmt.Sprintf("the controller exited: %v (log: %s)", ctrl.waitErr, ctrl.log.Name())
		default:
		}
		progress := ""
		if !rulesDone && time.Since(lastScrape) >= rulesPoll {
			lastScrape = time.Now()
			if m, err := ctrl.scrape(ctx, "kubecel_active_rules", "kubecel_pending_rules"); err == nil {
				active, ok := m.value("kubecel_active_rules")
				pending, _ := m.value("kubecel_pending_rules")
				switch {
				case !ok && convergedDone:
					// Absent until the controller is built: only a binary that never
					// registers it still lacks it once every parent converged.
					rulesDone = true
					logf("crds: the controller has no kubecel_active_rules: the time until every rule runs is not measured")
				case !ok:
					progress = "rules running not known yet; "
				case int(active) >= rules:
					rulesDone, p.res.rulesKnown, p.res.rulesRunning = true, true, time.Since(started)
					logf("crds: %d rules running (%d pending) %s after the start", int(active), int(pending), secs(p.res.rulesRunning))
				default:
					progress = fmt.Sprintf("%d/%d rules running, %d pending; ", int(active), rules, int(pending))
				}
			}
		}
		if !convergedDone {
			done, all, conv := p.w.converged(p.running(), p.edits)
			if convergedDone = done == all; convergedDone {
				p.res.converged = time.Since(started)
				p.res.cpuConverge, p.res.rssConverged = ctrl.cpuSeconds(), ctrl.rss().current
				p.res.machineCPU = b.sampleCPU().minus(cpu0)
				logf("crds: %d parents converged %s after the start; machine CPU %s", all, secs(p.res.converged), p.res.machineCPU)
			}
			progress += conv
		}
		return rulesDone && convergedDone, progress
	})
	if err != nil {
		return err
	}
	b.ctrls.saveProfiles(ctx, "heap", "heap-converged.pprof")
	if err := b.quiet(ctx); err != nil {
		return err
	}
	p.res.writes = b.audit.snapshot().minus(writes0)
	p.res.ruleWrites = byRule(b.audit.nameSnapshot().minus(names0))
	logf("crds: %.2f writes per measured parent, %.2f per parent of the rollout rule (%s)",
		p.res.writesPerParent(), float64(p.res.ruleWrites[rolloutRule])/rolloutParents, parentsAsOne(p.res.writes))
	return nil
}

// steady touches every parent, waits until the controller has reconciled them all,
// stays idle for --idle, and counts the writes meanwhile; the RSS then is the settled.
func (p *crdsPhase) steady(ctx context.Context) error {
	b := p.b
	if err := b.audit.read(); err != nil {
		return err
	}
	writes0 := b.audit.snapshot()
	reconciles0, err := p.reconciles(ctx)
	if err != nil {
		return err
	}
	var all []parentRef
	for _, k := range p.running() {
		for j := range k.parents {
			all = append(all, parentRef{k, j})
		}
	}
	logf("crds: steady state: touching %d parents, then %s idle", len(all), b.cfg.idle)
	if err := b.parallel(ctx, len(all), func(ctx context.Context, c dynamic.Interface, i int) error {
		return touch(ctx, c, all[i], "resync", "1")
	}); err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, p.timeout, true, func(ctx context.Context) (bool, error) {
		n, err := p.reconciles(ctx)
		p.res.steadyReconciles = int(n - reconciles0)
		return err == nil && p.res.steadyReconciles >= len(all), nil
	})
	if err != nil {
		return fmt.Errorf("the controller reconciled %d of %d touched parents: %w", p.res.steadyReconciles, len(all), err)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(b.cfg.idle):
	}
	if err := b.audit.read(); err != nil {
		return err
	}
	p.res.steadyWrites = b.audit.snapshot().minus(writes0)
	mem := p.ctrl.rss()
	p.res.rssSettled, p.res.rssSettledAnon = mem.current, mem.anon
	b.ctrls.saveProfiles(ctx, "heap", "heap-settled.pprof")
	b.ctrls.saveProfiles(ctx, "goroutine", "goroutine-settled.pprof")
	b.ctrls.saveMetrics(ctx, "metrics-settled.txt")
	logf("crds: steady state: %d writes after %d reconciles; settled RSS %.1f MB (anonymous %.1f MB)",
		p.res.steadyWrites.total(), p.res.steadyReconciles, mb(mem.current), mb(mem.anon))
	return nil
}

// reconciles is the controller's count of reconciles so far.
func (p *crdsPhase) reconciles(ctx context.Context) (float64, error) {
	m, err := p.ctrl.scrape(ctx, "kubecel_reconcile_total")
	if err != nil {
		return 0, err
	}
	n, _ := m.value("kubecel_reconcile_total")
	return n, nil
}

// byRule adds up writes counted by object name by the rule of the object ("" for an
// object of none).
func byRule(names writeCounts) writeCounts {
	out := writeCounts{}
	for name, n := range names {
		out[ruleOf(name)] += n
	}
	return out
}

// touch sets the annotation bench.kubecel.dev/<key> of a parent to value: a change of
// its metadata alone, which makes the controller reconcile it without a write.
func touch(ctx context.Context, c dynamic.Interface, r parentRef, key, value string) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"bench.kubecel.dev/%s":%q}}}`, key, value)
	_, err := c.Resource(r.kind.gvr()).Namespace(benchNS).Patch(ctx, r.kind.parentName(r.j), types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("parent %s of rule %s: %w", r.kind.parentName(r.j), r.kind.rule, err)
	}
	return err
}
