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
//     process, bin/kubecel run, so the figures are its own);
//  8. with --edit, after the update phase: an edit of the rules file applied at once,
//     and the same kind of edit rolled out in steps (edit.go), timed and with their
//     writes per parent, in a table of their own.
//
// With --crds K it runs instead a phase of its own (crds.go): K rules on K CRDs, one
// parent each, timed from the controller's start until every rule runs and every parent
// is converged, with writes per parent, writes at rest and memory; then, with
// reconciles going on, the longest wait of a reconcile on the controller's locks while
// a CRD appears, a reload edits one rule, and a rollout takes its steps. Its row goes to
// a table of its own.
//
// The controller runs as --replicas processes (default 1). With --sharding, implied by
// more than one replica, each is `kubecel run --sharding` with short lease timings, and
// the timed phases start once all of them serve the same ring; the writes are then also
// counted per replica (by user agent), and memory and CPU are each replica's own.
//
// It prints a table and adds a dated row to docs/benchmarks.md: to the table of sharded
// runs when sharded, else to the table of single-process runs. CPU profiles of each
// replica during convergence and heap profiles are written under --dir (under
// --dir/replica-K with several replicas).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
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
	skipLimits  bool
	pairs       int
	refs        bool
	// replicas is the number of kubecel processes; sharding runs each with --sharding
	// and shardingArgs; workers, when above 0, is each one's --workers.
	replicas     int
	sharding     bool
	shardingArgs string
	workers      int
	dir          string
	doc          string
	note         string
	// noisy runs the noisy-neighbour phase after the others (not sharded); onlyNoisy
	// runs it alone.
	noisy, onlyNoisy bool
	// noisyShape is how the heavy tenant lays out its work (noisyshape.go).
	noisyShape string
	// edit runs the rules-edit phase (edit.go) after the update phase.
	edit bool
	// crds, when above 0, runs only the phase of that many rules on as many CRDs
	// (crds.go); restricted runs its controller with least-privilege RBAC
	// (restricted.go).
	crds       int
	restricted bool
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
	flag.BoolVar(&c.skipLimits, "skip-limits", false, "skip the baseline and both limits (their columns read \"skipped\")")
	flag.IntVar(&c.pairs, "pairs", 1, "measure convergence and deletion against their limits this many times, alternating which goes first, and report the median ratios (one unsharded replica, with limits and deletion)")
	flag.IntVar(&c.replicas, "replicas", 1, "number of kubecel run processes; above 1 implies --sharding")
	flag.BoolVar(&c.sharding, "sharding", false, "run every replica with --sharding (with --replicas 1: the 1-replica reference for the speedup)")
	flag.StringVar(&c.shardingArgs, "sharding-args", defaultShardingArgs, "flags added to `kubecel run --sharding`: the bench's lease timings")
	flag.IntVar(&c.workers, "workers", 0, "--workers of each replica (0: kubecel's default)")
	flag.BoolVar(&c.refs, "refs", false, "each parent also reads its own settings ConfigMap through a ref (testdata/rules-refs.yaml); the N ConfigMaps are created before the limits")
	flag.StringVar(&c.dir, "dir", "bin/bench", "state directory: control-plane logs, controller log, profiles (replaced on each run)")
	flag.StringVar(&c.doc, "doc", "docs/benchmarks.md", "markdown file to append the result row to (empty: do not append)")
	flag.StringVar(&c.note, "note", "", "free text for the row's note column")
	flag.BoolVar(&c.noisy, "noisy", true, "after the other phases, run the noisy-neighbour phase (noisy.go) on a controller of its own; not with sharding")
	flag.BoolVar(&c.onlyNoisy, "only-noisy", false, "run only the noisy-neighbour phase and add only its row")
	flag.StringVar(&c.noisyShape, "noisy-shape", defaultShape, "the heavy tenant's 16,000 children in the noisy-neighbour phase: one-namespace (16 parents), namespaces (50 namespaces of one parent each) or cluster (1,000 cluster-scoped parents); rows of the last two go to their own table")
	flag.BoolVar(&c.edit, "edit", false, "after the update phase, time an edit of the rules applied at once and the same kind of edit rolled out in steps 1/10/50/100% (edit.go), and add a row to the rules-edit table")
	flag.IntVar(&c.crds, "crds", 0, "run only the phase of K rules on K CRDs, one parent each (crds.go): start, convergence, writes, memory, and the longest lock waits while a CRD appears, a reload and a rollout; add a row to its own table")
	flag.BoolVar(&c.restricted, "restricted", false, "with --crds: run the controller as the ServiceAccount of deploy/base (impersonated) with deploy/base's roles and the role `kubecel rbac` prints for the rules, not as the control plane's admin")
	flag.Parse()
	if c.refs {
		rulesYAML = rulesRefsYAML
	}
	if _, err := shapeNamed(c.noisyShape); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if c.replicas < 1 {
		fmt.Fprintln(os.Stderr, "bench: --replicas must be at least 1")
		os.Exit(2)
	}
	c.sharding = c.sharding || c.replicas > 1
	if c.crds < 0 || c.crds > 0 && (c.sharding || c.onlyNoisy) {
		fmt.Fprintln(os.Stderr, "bench: --crds must be at least 0, and runs one unsharded controller alone (not with --replicas, --sharding or --only-noisy)")
		os.Exit(2)
	}
	if c.restricted && c.crds == 0 {
		fmt.Fprintln(os.Stderr, "bench: --restricted goes with --crds")
		os.Exit(2)
	}
	if c.pairs < 1 || c.pairs > 1 && (c.sharding || c.skipLimits || c.skipDelete) {
		fmt.Fprintln(os.Stderr, "bench: --pairs must be at least 1, and above 1 needs one unsharded replica, the limits and the deletion phase")
		os.Exit(2)
	}
	dir, err := filepath.Abs(c.dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	c.dir = dir
	if c.timeout <= 0 {
		c.timeout = 5*time.Minute + time.Duration(c.n)*100*time.Millisecond
		if c.crds > 0 {
			c.timeout = 5*time.Minute + time.Duration(c.crds)*300*time.Millisecond
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, c)
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
	res := &results{n: c.n, machine: machine, kubecelArgs: c.flagsColumn(), sharding: c.sharding, note: c.note,
		replicas: make([]replicaResult, c.replicas)}
	if c.onlyNoisy {
		return noisyOnly(ctx, b, res)
	}
	if c.crds > 0 {
		return crdsOnly(ctx, b, machine)
	}
	if err := b.measure(ctx, res); err != nil {
		return err
	}
	b.ctrls.identify(res)
	var noisy *noisyResult
	if c.noisy && !c.sharding {
		if noisy, err = (noisyPhase{b}).run(ctx); err != nil {
			return fmt.Errorf("noisy neighbour: %w", err)
		}
	}
	res.machine.loadAfter = readLoad()
	res.total = time.Since(start)
	res.noNoisy = noisy == nil
	if c.doc != "" && c.sharding {
		if data, err := os.ReadFile(c.doc); err == nil {
			res.compareWithOneReplica(string(data))
		}
	}
	res.print(os.Stdout)
	if res.edit != nil {
		res.edit.print(os.Stdout, res.n)
	}
	if noisy != nil {
		noisy.print(os.Stdout)
	}
	if c.doc != "" {
		if err := res.appendTo(c.doc); err != nil {
			return err
		}
		logf("appended a row to %s", c.doc)
		if res.edit != nil {
			if err := addRow(c.doc, editHeading, editHeader, res.edit.row(res)); err != nil {
				return err
			}
			logf("appended a rules-edit row to %s", c.doc)
		}
		if noisy != nil {
			if err := noisy.addTo(c.doc, res); err != nil {
				return err
			}
			logf("appended a noisy-neighbour row to %s", c.doc)
		}
	}
	return nil
}

// noisyOnly runs only the noisy-neighbour phase (--only-noisy) and adds only its row.
func noisyOnly(ctx context.Context, b *bench, res *results) error {
	noisy, err := noisyPhase{b}.run(ctx)
	if err != nil {
		return fmt.Errorf("noisy neighbour: %w", err)
	}
	res.machine.loadAfter = readLoad()
	noisy.print(os.Stdout)
	if b.cfg.doc == "" {
		return nil
	}
	if err := noisy.addTo(b.cfg.doc, res); err != nil {
		return err
	}
	logf("appended a noisy-neighbour row to %s", b.cfg.doc)
	return nil
}

// defaultShardingArgs are lease timings for a bench: short enough that the replicas
// agree on the ring within seconds of starting.
const defaultShardingArgs = "--sharding-lease-duration=6s --sharding-renew-deadline=4s --sharding-retry-period=1s"

// flagsColumn is what the run adds to `kubecel run`, for the table's kubecel flags
// column: environment, --workers, --kubecel-args, and --sharding-args when not the
// default (the sharded table's text names the default).
func (c config) flagsColumn() string {
	parts := []string{c.kubecelEnv}
	if c.sharding && c.shardingArgs != defaultShardingArgs {
		parts = append(parts, c.shardingArgs)
	}
	if c.workers > 0 {
		parts = append(parts, fmt.Sprintf("--workers=%d", c.workers))
	}
	if c.restricted {
		parts = append(parts, "(bench --restricted)")
	}
	return strings.Join(strings.Fields(strings.Join(append(parts, c.kubecelArgs), " ")), " ")
}

// measure runs the phases in order; each needs the state the previous one left.
func (b *bench) measure(ctx context.Context, res *results) error {
	var err error
	if !b.cfg.skipLimits {
		if res.baseline, err = b.baseline(ctx); err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
	}
	if b.cfg.refs {
		if err := b.createSettings(ctx); err != nil {
			return fmt.Errorf("settings: %w", err)
		}
	}
	if !b.cfg.skipLimits {
		if err := b.limits(ctx, res); err != nil {
			return err
		}
	}
	if err := b.startControllers(ctx, res); err != nil {
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
	if b.cfg.edit {
		if res.edit, err = (editPhase{b}).run(ctx); err != nil {
			return fmt.Errorf("rules edit: %w", err)
		}
	}
	if !b.cfg.skipDelete {
		if res.deletion, err = b.deletion(ctx); err != nil {
			return fmt.Errorf("deletion: %w", err)
		}
	}
	for i, c := range b.ctrls {
		res.replicas[i].cpuTotal = c.cpuSeconds()
		res.replicas[i].peak = c.rss().peak
	}
	if b.cfg.pairs > 1 {
		b.ctrls.identify(res) // before the pairs stop the replicas
		return b.morePairs(ctx, res)
	}
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}
