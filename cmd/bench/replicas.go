package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The controller runs as one or several replicas, each its own `kubecel run` process
// with its own endpoints, log and profiles. With sharding (--sharding, implied by
// --replicas above 1) every replica runs `kubecel run --sharding` with the bench's short
// lease timings, and the timed phases start only once every replica is ready and all
// serve the same ring of all the replicas.

// fleet is the controller's replicas, in start order.
type fleet []*controller

// shardNS holds the replicas' membership Leases. The bench creates it; the audit counts
// only writes in benchNS, so Lease renewals are not counted as the controller's writes.
const shardNS = "kubecel-system"

// startControllers writes the rules, starts the replicas against the control plane,
// waits until each is ready (and, sharded, until they agree on the ring), and starts the
// bench's own watches.
func (b *bench) startControllers(ctx context.Context, res *results) error {
	rulesPath := filepath.Join(b.cfg.dir, "rules.yaml")
	if err := os.WriteFile(rulesPath, rulesYAML, 0o644); err != nil {
		return err
	}
	n := b.cfg.replicas
	ports, err := freePorts(3 * n)
	if err != nil {
		return err
	}
	start := time.Now()
	for i := range n {
		name, dir := fmt.Sprintf("replica-%d", i+1), b.cfg.dir
		if n > 1 {
			dir = filepath.Join(b.cfg.dir, name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		c, err := startProcess(b.cfg, name, dir, b.cfg.runArgs(rulesPath, b.cp.Kubeconfig), [3]int{ports[3*i], ports[3*i+1], ports[3*i+2]})
		if err != nil {
			return err
		}
		b.ctrls = append(b.ctrls, c)
		res.replicas[i].name = name
	}
	for _, c := range b.ctrls {
		if err := c.waitReady(ctx); err != nil {
			return fmt.Errorf("%s (log: %s): %w", c.name, c.log.Name(), err)
		}
	}
	if b.cfg.sharding {
		rings, err := b.ctrls.waitRing(ctx, 2*time.Minute)
		if err != nil {
			return err
		}
		res.ringAgreed = time.Since(start)
		for i, r := range rings {
			res.replicas[i].bucketsAtStart = r.serving
		}
		logf("ring %s agreed by %d replicas %s after they started", rings[0].version, n, res.ringAgreed.Round(time.Millisecond))
	}
	b.watch, err = startTracker(ctx, b.kube, b.clients[0], benchNS, b.cfg.n)
	return err
}

// runArgs are the flags every replica gets, after its endpoints: the rules, the
// cluster, sharding with the bench's timings, --workers, then --kubecel-args (so that
// they can override any of the others: the last value of a flag wins).
func (c config) runArgs(rulesPath, kubeconfig string) []string {
	args := []string{"--rules", rulesPath, "--kubeconfig", kubeconfig}
	if c.sharding {
		args = append(args, "--sharding", "--sharding-namespace="+shardNS)
		args = append(args, strings.Fields(c.shardingArgs)...)
	}
	if c.workers > 0 {
		args = append(args, "--workers="+strconv.Itoa(c.workers))
	}
	return append(args, strings.Fields(c.kubecelArgs)...)
}

// cpuSeconds returns each replica's CPU seconds so far.
func (f fleet) cpuSeconds() []float64 {
	out := make([]float64, len(f))
	for i, c := range f {
		out[i] = c.cpuSeconds()
	}
	return out
}

// metric returns the sum of a metric over every replica.
func (f fleet) metric(ctx context.Context, name string) (float64, error) {
	var sum float64
	for _, c := range f {
		v, err := c.metric(ctx, name)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// profileCPU profiles every replica until the returned function is called.
func (f fleet) profileCPU(ctx context.Context) (stop func()) {
	ps := make([]*profiler, len(f))
	for i, c := range f {
		ps[i] = c.profileCPU(ctx)
	}
	return func() {
		for _, p := range ps {
			p.stop()
		}
	}
}

// saveProfiles writes a profile of every replica into its directory; a failure is
// logged, not returned: profiles are for reading afterwards, not figures of the run.
func (f fleet) saveProfiles(ctx context.Context, profile, file string) {
	for _, c := range f {
		if err := c.saveProfile(ctx, profile, file); err != nil {
			logf("%s: %s profile: %v", c.name, profile, err)
		}
	}
}

// saveMetrics copies every replica's /metrics into file in its directory.
func (f fleet) saveMetrics(ctx context.Context, file string) {
	for _, c := range f {
		if err := save(ctx, c.metrics+"/metrics", filepath.Join(c.dir, file)); err != nil {
			logf("%s: save metrics: %v", c.name, err)
		}
	}
}

// stop stops every replica at once and logs those that did not stop cleanly.
func (f fleet) stop() {
	var wg sync.WaitGroup
	for _, c := range f {
		wg.Go(func() {
			if err := c.stop(); err != nil {
				logf("stop %s: %v", c.name, err)
			}
		})
	}
	wg.Wait()
}
