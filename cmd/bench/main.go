// Command bench measures kubecel against the API server's own limit on this machine.
//
// It starts a local control plane (etcd, kube-apiserver with an audit log of writes,
// kube-controller-manager for garbage collection), installs the WebApp CRD and rule
// under testdata/, and for N parents measures:
//
//  1. baseline: the same 3N children server-side applied directly by parallel
//     unthrottled clients, no controller; then the limits (limits.go): the same writes
//     the controller and the bench send per parent (create the parent, apply its
//     children, apply its status), and the direct delete of those children;
//  2. convergence: from creating the N parents until every parent is Ready and Synced
//     and every child exists, and its ratios to the same-writes limit and the baseline;
//  3. the controller's write requests per parent during convergence;
//  4. steady state: a forced reconcile of every parent, then an idle period: writes;
//  5. update propagation: every parent's spec patched, until every child shows it;
//  6. deletion: every parent deleted, until every child is gone, and its ratio to the
//     direct-delete limit;
//  7. the controller's peak and settled RSS and CPU seconds (it runs as its own
//     process, bin/kubecel run, so the figures are its own).
//
// It prints a table and appends a dated row to docs/benchmarks.md. CPU profiles of the
// controller during convergence and heap profiles are written under --dir.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

type config struct {
	n           int
	clients     int
	idle        time.Duration
	timeout     time.Duration
	kubecel     string
	kubecelArgs string
	kubecelEnv  string
	skipDelete  bool
	refs        bool
	dir         string
	doc         string
	note        string
}

func main() {
	var c config
	flag.IntVar(&c.n, "n", 1000, "number of parents (each has 3 children)")
	flag.IntVar(&c.clients, "clients", 16, "parallel unthrottled clients for the baseline and the bench's own writes")
	flag.DurationVar(&c.idle, "idle", 60*time.Second, "steady state: idle time after the forced reconcile of every parent")
	flag.DurationVar(&c.timeout, "timeout", 0, "limit of each timed phase (default 5m + 100ms per parent)")
	flag.StringVar(&c.kubecel, "kubecel", "bin/kubecel", "the kubecel binary to run as the controller")
	flag.StringVar(&c.kubecelArgs, "kubecel-args", "", "extra flags for `kubecel run`, space separated (e.g. \"--workers=16 --qps=500\")")
	flag.StringVar(&c.kubecelEnv, "kubecel-env", "", "extra environment for the controller, space separated (e.g. \"GOGC=50 GOMEMLIMIT=100MiB\")")
	flag.BoolVar(&c.skipDelete, "skip-deletion", false, "skip the direct-delete limit and the deletion phase")
	flag.BoolVar(&c.refs, "refs", false, "each parent also reads its own settings ConfigMap through a ref (testdata/rules-refs.yaml); the N ConfigMaps are created before the limits")
	flag.StringVar(&c.dir, "dir", "bin/bench", "state directory: control-plane logs, controller log, profiles (replaced on each run)")
	flag.StringVar(&c.doc, "doc", "docs/benchmarks.md", "markdown file to append the result row to (empty: do not append)")
	flag.StringVar(&c.note, "note", "", "free text for the row's note column")
	flag.Parse()
	if c.refs {
		rulesYAML = rulesRefsYAML
	}
	if c.timeout <= 0 {
		c.timeout = 5*time.Minute + time.Duration(c.n)*100*time.Millisecond
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, c)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	start := time.Now()
	machine := readMachine()
	logf("machine: %d CPUs, %.1f GiB, %s, load %s", machine.cpus, machine.memGiB, machine.goVersion, machine.load)
	b, err := setup(ctx, c)
	if err != nil {
		return err
	}
	defer b.close()
	res := &results{n: c.n, machine: machine, kubecelArgs: strings.TrimSpace(c.kubecelEnv + " " + c.kubecelArgs), note: c.note}
	if err := b.measure(ctx, res); err != nil {
		return err
	}
	res.machine.loadAfter = readLoad()
	res.total = time.Since(start)
	res.print(os.Stdout)
	if c.doc != "" {
		if err := res.appendTo(c.doc); err != nil {
			return err
		}
		logf("appended a row to %s", c.doc)
	}
	return nil
}

// measure runs the phases in order; each needs the state the previous one left.
func (b *bench) measure(ctx context.Context, res *results) error {
	var err error
	if res.baseline, err = b.baseline(ctx); err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	if b.cfg.refs {
		if err := b.createSettings(ctx); err != nil {
			return fmt.Errorf("settings: %w", err)
		}
	}
	if err := b.limits(ctx, res); err != nil {
		return err
	}
	if err := b.startController(ctx); err != nil {
		return err
	}
	if err := b.converge(ctx, res); err != nil {
		return fmt.Errorf("convergence: %w", err)
	}
	if err := b.steady(ctx, res); err != nil {
		return fmt.Errorf("steady state: %w", err)
	}
	if res.update, err = b.update(ctx); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	if !b.cfg.skipDelete {
		if res.deletion, err = b.deletion(ctx); err != nil {
			return fmt.Errorf("deletion: %w", err)
		}
	}
	res.cpuTotal = b.ctrl.cpuSeconds()
	res.peakRSS = b.ctrl.rss().peak
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}
