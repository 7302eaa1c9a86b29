package main

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecel/kubecel/internal/rollout"
)

// The lock-wait part of the --crds phase (crds.go): three events, each with the load
// going on, and the longest wait of a reconcile on the controller's locks during each.

const (
	// loadRate is how many measured parents the load touches a second.
	loadRate = 10
	// lockWindowMin is the least time an event's window lasts from its start: after a
	// CRD event the controller retried its pending rules every second for 30 s (issue
	// 42), and a window that ended sooner would miss those retries.
	lockWindowMin = 30 * time.Second
	// editValue is the edit the reload and the rollout make.
	editValue = "1"
)

// locks runs the three events with the load going on, and reads the longest wait of
// the whole run at the end.
func (p *crdsPhase) locks(ctx context.Context) error {
	stopLoad := p.load(ctx)
	defer func() {
		n := stopLoad()
		p.res.loadPatches = n
		logf("crds: the load touched %d parents", n)
	}()
	for _, ev := range []struct {
		name string
		run  func(context.Context) error
		into *lockFigure
	}{
		{"the late CRD appears", p.crdAppears, &p.res.waits[0]},
		{"a reload edits one rule", p.reloadOne, &p.res.waits[1]},
		{"the rollout rule's edit takes its steps", p.rolloutStep, &p.res.waits[2]},
	} {
		logf("crds: lock waits: %s", ev.name)
		win, err := p.begin(ctx)
		if err != nil {
			return err
		}
		if err := ev.run(ctx); err != nil {
			return fmt.Errorf("%s: %w", ev.name, err)
		}
		if *ev.into, err = win.end(ctx); err != nil {
			return err
		}
		logf("crds: %s: longest lock wait %s (%.0f reconciles in %s)", ev.name, ev.into.longest, ev.into.reconciles, secs(ev.into.window))
	}
	m, err := p.ctrl.scrape(ctx, lockWaitMetric)
	if err != nil {
		return err
	}
	p.res.overall = longestWait(nil, m.histogram(lockWaitMetric))
	logf("crds: longest lock wait of the whole run %s", p.res.overall)
	return nil
}

// load touches one measured parent after another, loadRate a second, until the
// returned stop is called; stop returns how many it touched. A failed touch is logged.
func (p *crdsPhase) load(ctx context.Context) (stop func() int) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	n := 0
	wg.Go(func() {
		tick := time.NewTicker(time.Second / loadRate)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			r := parentRef{p.kinds[i%p.k], 0}
			if err := touch(ctx, p.b.clients[0], r, "load", strconv.Itoa(i)); err != nil && ctx.Err() == nil {
				logf("crds: load: %v", err)
				continue
			}
			n++
		}
	})
	return func() int {
		cancel()
		wg.Wait()
		return n
	}
}

// lockFigure is the longest lock wait during an event (a longestWait cell), with the
// reconciles that started and the window's length.
type lockFigure struct {
	longest    string
	reconciles float64
	window     time.Duration
}

// lockWindow is an event's window: when it began, and the histogram and the count of
// reconciles then.
type lockWindow struct {
	ctrl       *controller
	start      time.Time
	before     *histogram
	reconciles float64
}

func (p *crdsPhase) begin(ctx context.Context) (lockWindow, error) {
	m, err := p.ctrl.scrape(ctx, lockWaitMetric, "kubecel_reconcile_total")
	if err != nil {
		return lockWindow{}, err
	}
	n, _ := m.value("kubecel_reconcile_total")
	return lockWindow{ctrl: p.ctrl, start: time.Now(), before: m.histogram(lockWaitMetric), reconciles: n}, nil
}

// end waits until the window is lockWindowMin long and reads the figure.
func (w lockWindow) end(ctx context.Context) (lockFigure, error) {
	select {
	case <-ctx.Done():
		return lockFigure{}, ctx.Err()
	case <-time.After(time.Until(w.start.Add(lockWindowMin))):
	}
	m, err := w.ctrl.scrape(ctx, lockWaitMetric, "kubecel_reconcile_total")
	if err != nil {
		return lockFigure{}, err
	}
	n, _ := m.value("kubecel_reconcile_total")
	return lockFigure{longest: longestWait(w.before, m.histogram(lockWaitMetric)), reconciles: n - w.reconciles, window: time.Since(w.start)}, nil
}

// crdAppears creates the late rule's CRD, waits until the rule runs (when the binary
// says how many do), creates its parent and waits until it is converged.
func (p *crdsPhase) crdAppears(ctx context.Context) error {
	late := p.late()
	start := time.Now()
	if err := p.createCRD(ctx, late); err != nil {
		return err
	}
	if err := p.waitEstablished(ctx, []crdKind{late}); err != nil {
		return err
	}
	if err := p.w.watch([]crdKind{late}); err != nil {
		return err
	}
	if p.res.rulesKnown {
		err := waitFor(ctx, p.timeout, "the late rule running", func() (bool, string) {
			m, err := p.ctrl.scrape(ctx, "kubecel_active_rules")
			if err != nil {
				return false, err.Error()
			}
			active, _ := m.value("kubecel_active_rules")
			return int(active) >= p.k+2, fmt.Sprintf("%d/%d rules running", int(active), p.k+2)
		})
		if err != nil {
			return err
		}
		p.res.lateRunning = time.Since(start)
	}
	if _, err := p.b.clients[0].Resource(late.gvr()).Namespace(benchNS).Create(ctx, late.parent(benchNS, 0), metav1.CreateOptions{}); err != nil {
		return err
	}
	err := waitFor(ctx, p.timeout, "the late parent converged", func() (bool, string) {
		return p.w.at(late, 0, ""), "not yet"
	})
	p.res.lateConverged = time.Since(start)
	logf("crds: the late rule ran %s and its parent converged %s after its CRD was created", secs(p.res.lateRunning), secs(p.res.lateConverged))
	return err
}

// reloadOne edits one measured rule and times it until its parent shows the edit.
func (p *crdsPhase) reloadOne(ctx context.Context) error {
	target := p.kinds[p.k/2]
	var err error
	p.res.reload, err = p.edit(ctx, target.rule, func() (bool, string) {
		return p.w.at(target, 0, editValue), fmt.Sprintf("parent %s not at the edit yet", target.parentName(0))
	})
	if err == nil {
		logf("crds: reload of rule %s: its parent at the edit %s after the controller read the file (%s after the write, %s after the reload's log line); writes to it %d, to the other rules %d",
			target.rule, secs(p.res.reload.took), secs(p.res.reload.sinceWrite), secs(p.res.reload.sinceReload), p.res.reload.own, p.res.reload.others)
	}
	return err
}

// rolloutStep edits the rollout rule and times it until all its parents show the edit,
// noting when each step's share of them first did.
func (p *crdsPhase) rolloutStep(ctx context.Context) error {
	k := p.kinds[p.k]
	clock := stepClock{steps: crdRolloutSteps}
	var err error
	p.res.rollout, err = p.edit(ctx, k.rule, func() (bool, string) {
		at := 0
		for j := range k.parents {
			if p.w.at(k, j, editValue) {
				at++
			}
		}
		clock.see(at, k.parents)
		return at == k.parents, fmt.Sprintf("%d/%d rollout parents at the edit", at, k.parents)
	})
	if err != nil {
		return err
	}
	p.res.rolloutSteps = clock.since(p.res.rollout.readAt)
	p.res.rolloutPhase = "?"
	if parent := p.w.parent(k.rule, k.parentName(0)); parent != nil {
		if rev := rollout.RevisionOf(parent, k.rule); rev != "" {
			p.res.rolloutPhase = revisionPhase(ctx, p.b.kube, rev)
		}
	}
	logf("crds: rollout: every parent at the edit %s after the controller read the file (%s after the write, %s after the reload's log line); steps reached at %s; stored phase %s; writes to it %d, to the other rules %d",
		secs(p.res.rollout.took), secs(p.res.rollout.sinceWrite), secs(p.res.rollout.sinceReload), stepTimes(p.res.rolloutSteps), p.res.rolloutPhase, p.res.rollout.own, p.res.rollout.others)
	return nil
}

// crdsEdit is what an edit of one rule took until done held: from the controller's
// first read of the rewritten file (took), from the bench's write, and from the
// controller's log line of the reload (which it writes once the new rules are in
// place); and the controller's writes from the write until it was quiet, to the edited
// rule's parents and children and to every other rule's.
type crdsEdit struct {
	took, sinceWrite, sinceReload time.Duration
	readAt                        time.Time
	own, others                   int
}

// edit writes the rules with rule at editValue, waits until the controller logged a
// reload and done holds, then until it is quiet, and counts its writes by rule.
func (p *crdsPhase) edit(ctx context.Context, rule string, done func() (bool, string)) (crdsEdit, error) {
	var e crdsEdit
	b := p.b
	loads, _, err := reloads(p.ctrl.log.Name())
	if err != nil {
		return e, err
	}
	if err := b.audit.read(); err != nil {
		return e, err
	}
	names0 := b.audit.nameSnapshot()
	edits := maps.Clone(p.edits)
	edits[rule] = editValue
	written := time.Now()
	if err := writeAtomically(p.rulesPath, crdRules(p.kinds, edits)); err != nil {
		return e, err
	}
	p.edits = edits
	if err := waitFor(ctx, p.timeout, "edit of rule "+rule, done); err != nil {
		return e, err
	}
	finished := time.Now()
	n, reload, err := reloads(p.ctrl.log.Name())
	if err != nil {
		return e, err
	}
	if n <= loads {
		return e, fmt.Errorf("rule %s reached the edit, but the controller logged no reload of the rules (log: %s)", rule, p.ctrl.log.Name())
	}
	read, ok := p.reads.firstAfter(written)
	if !ok {
		return e, fmt.Errorf("rule %s reached the edit, but no read of %s was seen", rule, p.rulesPath)
	}
	e.took, e.sinceWrite, e.sinceReload, e.readAt = finished.Sub(read), finished.Sub(written), finished.Sub(reload), read
	if err := b.quiet(ctx); err != nil {
		return e, err
	}
	for r, count := range byRule(b.audit.nameSnapshot().minus(names0)) {
		if r == rule {
			e.own += count
		} else {
			e.others += count
		}
	}
	return e, nil
}
