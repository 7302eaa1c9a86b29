package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A single comparison of convergence with its limit is not precise to better than about
// 20% on a shared 2-CPU machine: the same requests cost the API server a different CPU
// time from one minute to the next. --pairs K measures the two K times, each pair on the
// same stored state (the previous pair's objects deleted), alternating which of the two
// goes first, and reports every pair's ratios and their median. The first pair is the
// run's own limits and convergence; each further pair stops the controller, and
// measures the limits with no controller running (as the first pair does) and
// convergence and deletion with a freshly started one. The steady state, update and
// memory phases are not repeated.

// pair is one measurement of convergence and deletion against their limits.
type pair struct {
	controllerFirst                        bool
	limit, converge, deleteLimit, deletion time.Duration
	// controllerCPU is the controllers' CPU seconds during convergence, clientsCPU the
	// bench's during the same-writes limit: what its 16 clients spent on the same writes
	// (with the bench's watch of the namespace, which also runs during convergence).
	controllerCPU, clientsCPU float64
}

func (p pair) convergeRatio() float64 { return over(p.converge, p.limit) }
func (p pair) deleteRatio() float64   { return over(p.deletion, p.deleteLimit) }

// cpuRatio is the controllers' CPU for the same writes against the clients'; 0 when
// either was not measured.
func (p pair) cpuRatio() float64 {
	if p.controllerCPU <= 0 || p.clientsCPU <= 0 {
		return 0
	}
	return p.controllerCPU / p.clientsCPU
}

// morePairs measures pairs 2 to --pairs after the run's phases, which leave the bench
// namespace empty.
func (b *bench) morePairs(ctx context.Context, res *results) error {
	res.pairs = []pair{{limit: res.limit, converge: res.converge, deleteLimit: res.deleteLimit, deletion: res.deletion,
		controllerCPU: res.convergeCPU.procs["kubecel"], clientsCPU: res.limitCPU.procs["bench"]}}
	for i := 2; i <= b.cfg.pairs; i++ {
		p := pair{controllerFirst: i%2 == 0}
		b.stopControllers()
		steps := []func() error{
			func() error { return b.pairLimits(ctx, &p) },
			func() error { return b.pairController(ctx, &p) },
		}
		if p.controllerFirst {
			slices.Reverse(steps)
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return fmt.Errorf("pair %d: %w", i, err)
			}
		}
		logf("pair %d (%s first): convergence %s (%s limit), deletion %s (%s limit), controller CPU %.1f s (%s the clients' %.1f s)", i, p.first(),
			p.converge.Round(time.Millisecond), times(p.convergeRatio()), p.deletion.Round(time.Millisecond), times(p.deleteRatio()),
			p.controllerCPU, times(p.cpuRatio()), p.clientsCPU)
		res.pairs = append(res.pairs, p)
	}
	return nil
}

func (p pair) first() string {
	if p.controllerFirst {
		return "controller"
	}
	return "limits"
}

// stopControllers stops the replicas and the bench's watches of their namespace.
func (b *bench) stopControllers() {
	for _, c := range b.ctrls {
		if err := c.stop(); err != nil {
			logf("%s: %v", c.name, err)
		}
	}
	b.ctrls = nil
	if b.watch != nil {
		b.watch.stop()
		b.watch = nil
	}
}

// pairLimits measures both limits with no controller running, as the first pair does.
func (b *bench) pairLimits(ctx context.Context, p *pair) error {
	var r results
	if err := b.limits(ctx, &r); err != nil {
		return err
	}
	p.limit, p.deleteLimit, p.clientsCPU = r.limit, r.deleteLimit, r.limitCPU.procs["bench"]
	return nil
}

// pairController starts the controller, times convergence and deletion as the run's
// phases do, and stops it again.
func (b *bench) pairController(ctx context.Context, p *pair) error {
	scratch := &results{replicas: make([]replicaResult, b.cfg.replicas)}
	if err := b.startControllers(ctx, scratch); err != nil {
		return err
	}
	defer b.stopControllers()
	logf("pair convergence: creating %d parents", b.cfg.n)
	start, cpu0 := time.Now(), b.sampleCPU()
	if err := b.createParents(ctx); err != nil {
		return err
	}
	if err := waitFor(ctx, b.cfg.timeout, "convergence", b.watch.converged); err != nil {
		return err
	}
	p.converge, p.controllerCPU = time.Since(start), b.sampleCPU().minus(cpu0).procs["kubecel"]
	var err error
	p.deletion, err = b.deletion(ctx)
	return err
}

// median of the pairs' ratios; 0 when there are none.
func median(pairs []pair, ratio func(pair) float64) float64 {
	var xs []float64
	for _, p := range pairs {
		if x := ratio(p); x > 0 {
			xs = append(xs, x)
		}
	}
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

// pairsSummary is "1.31x 1.09x 1.12x, median 1.12x" for one ratio, empty without pairs.
func pairsSummary(pairs []pair, ratio func(pair) float64) string {
	if len(pairs) < 2 {
		return ""
	}
	parts := make([]string, 0, len(pairs))
	for _, p := range pairs {
		parts = append(parts, times(ratio(p)))
	}
	return fmt.Sprintf("%s, median %s", strings.Join(parts, " "), times(median(pairs, ratio)))
}

// pairsNote is what the table's note column says of the pairs.
func (r *results) pairsNote() string {
	if len(r.pairs) < 2 {
		return ""
	}
	note := fmt.Sprintf("%d pairs, alternating which goes first: convergence x limit %s", len(r.pairs), pairsSummary(r.pairs, pair.convergeRatio))
	if r.deletion > 0 {
		note += fmt.Sprintf("; deletion x limit %s", pairsSummary(r.pairs, pair.deleteRatio))
	}
	if median(r.pairs, pair.cpuRatio) > 0 {
		note += fmt.Sprintf("; controller CPU x clients' CPU %s", pairsSummary(r.pairs, pair.cpuRatio))
	}
	return note
}
