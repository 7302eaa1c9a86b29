package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// results are the figures of one run.
type results struct {
	n           int
	machine     machine
	kubecelArgs string
	sharding    bool
	// noNoisy is set when the noisy-neighbour phase did not run (--noisy=false): the
	// wall time is then not that of `make bench`.
	noNoisy bool
	note    string
	total   time.Duration

	// baseline and limit are 0 when skipped (--skip-limits); deleteLimit and deletion
	// also with --skip-deletion.
	baseline, converge, update, deletion time.Duration
	// limit is the same-writes limit, deleteLimit the direct-delete limit (limits.go).
	limit, deleteLimit   time.Duration
	writes, steadyWrites writeCounts
	// agentWrites and steadyAgents are the same writes by user agent (one per replica).
	agentWrites, steadyAgents writeCounts
	steadyReconciles          int
	// ringAgreed is how long the sharded replicas took from the first start until they
	// agreed on the ring.
	ringAgreed time.Duration
	// convergeCPU is where the machine's CPU went during convergence, limitCPU during
	// the same-writes limit.
	convergeCPU, limitCPU cpuUse
	// pairs are every measurement of convergence and deletion against their limits,
	// the run's own first, with --pairs above 1 (pairs.go); nil otherwise.
	pairs    []pair
	replicas []replicaResult
	// edit is the rules-edit phase's figures (--edit); nil when it did not run.
	edit *editResult
	// oneReplica is the convergence of the latest 1-replica sharded row with the same N
	// and flags (speedupRef is its date), speedup that over this run's; 0 when unknown.
	oneReplica time.Duration
	speedup    float64
	speedupRef string
}

// replicaResult is what one replica's process used and did.
type replicaResult struct {
	name string
	// bucketsAtStart is how many of the ring's buckets it served when the ring was
	// agreed (sharded only).
	bucketsAtStart                        int
	peak, converged, settled, settledAnon uint64
	cpuConverge, cpuTotal                 float64
	// work is what its work queue did during convergence (workNames).
	work metricValues
	// shard is its kubecel_shard_* metrics at the settled point (sharded only).
	shard metricValues
	// agent is the user agent of its requests in the audit log, where identify could
	// tell; empty otherwise.
	agent string
}

type machine struct {
	cpus            int
	memGiB          float64
	goVersion       string
	load, loadAfter string
}

func readMachine() machine {
	m := machine{cpus: runtime.NumCPU(), goVersion: runtime.Version(), load: readLoad()}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				m.memGiB = kb / (1 << 20)
			}
		}
	}
	return m
}

// readLoad returns the 1, 5 and 15 minute load averages, as uptime prints them.
func readLoad() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func mb(b uint64) float64 { return float64(b) / 1e6 }

// ratio is convergence over the baseline; 0 when the baseline was skipped.
func (r *results) ratio() float64 { return over(r.converge, r.baseline) }

// limitRatio is convergence over the same-writes limit; 0 when it was skipped.
func (r *results) limitRatio() float64 { return over(r.converge, r.limit) }

func over(a, b time.Duration) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return a.Seconds() / b.Seconds()
}

// cpuConverge and cpuTotal are the CPU seconds of all replicas together.
func (r *results) cpuConverge() float64 {
	sum := 0.0
	for _, rr := range r.replicas {
		sum += rr.cpuConverge
	}
	return sum
}

func (r *results) cpuTotal() float64 {
	sum := 0.0
	for _, rr := range r.replicas {
		sum += rr.cpuTotal
	}
	return sum
}

// deleteRatio is deletion over the direct-delete limit; 0 when either was skipped.
func (r *results) deleteRatio() float64 { return over(r.deletion, r.deleteLimit) }

func (r *results) writesPerParent() float64 { return float64(r.writes.total()) / float64(r.n) }

func (r *results) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nkubecel bench, N=%d parents (%d children), %s, %d CPUs, load %s -> %s\n", r.n, 3*r.n, r.setup(), r.machine.cpus, r.machine.load, r.machine.loadAfter)
	fmt.Fprintf(tw, "measure\tvalue\tgoal\n")
	row := func(name, value, goal string) { fmt.Fprintf(tw, "%s\t%s\t%s\n", name, value, goal) }
	row("1 baseline: children only (direct apply, 16 clients)", secsOrSkipped(r.baseline), "")
	row("1 same-writes limit (parent, children, status; 16 clients)", secsOrSkipped(r.limit), "")
	if r.limit > 0 {
		row("  machine CPU during the same-writes limit (s)", r.limitCPU.String(), "")
	}
	if r.deleteLimit > 0 {
		row("1 direct-delete limit (children, then parent; 16 clients)", secs(r.deleteLimit), "")
	}
	if r.sharding {
		row("  ring agreed after the replicas started", secs(r.ringAgreed), "")
	}
	row("2 convergence", fmt.Sprintf("%s (%s same-writes limit, %s baseline)", secs(r.converge), times(r.limitRatio()), times(r.ratio())), "<= 1.15x same-writes limit")
	if len(r.pairs) > 1 {
		row(fmt.Sprintf("2 convergence over %d pairs (x same-writes limit)", len(r.pairs)), pairsSummary(r.pairs, pair.convergeRatio), "median <= 1.15x")
	}
	row("3 writes per parent", fmt.Sprintf("%.2f (%s)", r.writesPerParent(), r.writes), "<= 4 (children + 1)")
	row("4 steady-state writes", fmt.Sprintf("%d (%d reconciles)", r.steadyWrites.total(), r.steadyReconciles), "0")
	row("5 update propagation", secs(r.update), "")
	if r.deletion > 0 {
		row("6 deletion", fmt.Sprintf("%s (%s direct-delete limit)", secs(r.deletion), times(r.deleteRatio())), "<= 1.5x direct-delete limit")
		if len(r.pairs) > 1 {
			row(fmt.Sprintf("6 deletion over %d pairs (x direct-delete limit)", len(r.pairs)), pairsSummary(r.pairs, pair.deleteRatio), "median <= 1.5x")
		}
	} else {
		row("6 deletion", "skipped", "")
	}
	for _, rr := range r.replicas {
		name := "7 RSS peak / converged / settled"
		if len(r.replicas) > 1 {
			name = "7 " + rr.name + " RSS peak / converged / settled"
		}
		row(name, fmt.Sprintf("%.0f / %.0f / %.0f MB (settled anonymous %.0f MB)", mb(rr.peak), mb(rr.converged), mb(rr.settled), mb(rr.settledAnon)), "settled < 150 MB at N=10,000")
	}
	row("7 CPU convergence / total", fmt.Sprintf("%.1f s / %.1f s", r.cpuConverge(), r.cpuTotal()), "")
	if first := (pair{controllerCPU: r.convergeCPU.procs["kubecel"], clientsCPU: r.limitCPU.procs["bench"]}); first.cpuRatio() > 0 {
		row("7 controller CPU for the same writes (x the 16 clients')", fmt.Sprintf("%.1f s (%s the clients' %.1f s)", first.controllerCPU, times(first.cpuRatio()), first.clientsCPU), "<= 1.0x")
	}
	if len(r.pairs) > 1 && median(r.pairs, pair.cpuRatio) > 0 {
		row(fmt.Sprintf("7 controller CPU over %d pairs (x the clients')", len(r.pairs)), pairsSummary(r.pairs, pair.cpuRatio), "median <= 1.0x")
	}
	row("  machine CPU during convergence (s)", r.convergeCPU.String(), "")
	row("bench wall time", secs(r.total), "")
	tw.Flush()
	r.printReplicas(w)
}

// setup says how the controller ran: one process, or N sharded replicas.
func (r *results) setup() string {
	if !r.sharding {
		return "1 controller process"
	}
	return fmt.Sprintf("%d sharded replica(s)", len(r.replicas))
}

func secsOrSkipped(d time.Duration) string {
	if d <= 0 {
		return "skipped"
	}
	return secs(d)
}

// times prints a ratio, or "skipped" for 0 (a limit that was not measured).
func times(x float64) string {
	if x <= 0 {
		return "skipped"
	}
	return fmt.Sprintf("%.2fx", x)
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// cell is a time in seconds for a table cell, or "skipped".
func cell(d time.Duration) string {
	if d <= 0 {
		return "skipped"
	}
	return fmt.Sprintf("%.1f", d.Seconds())
}

// runsHeading starts the table of runs measured against both limits. Rows of earlier
// versions of the bench (children-only baseline only) stay in the table above it.
const runsHeading = "\n## Runs against the same-writes limit\n"

const docHeader = runsHeading + `
Appended by ` + "`make bench`" + ` (cmd/bench). Times in seconds. "limit" is the same-writes
limit (per parent: create it, apply its children, apply its status, sent by 16 clients),
"delete limit" those children and then their parents deleted by 16 clients; both run in a namespace that is
deleted before the controller starts, so the controller meets the stored state the limits
met. Writes are the controller's write requests in the bench namespace, from the API
server's audit log. RSS in MB (10^6 bytes). CPU is the controller's user+system seconds.
Load is the 1/5/15-minute load average before -> after the run.

| date (UTC) | N | CPUs | mem GiB | Go | load | baseline | limit | convergence (x limit / x baseline) | writes/parent | steady writes | update | delete limit | deletion (x limit) | RSS peak / settled (anon) | CPU conv. / total | kubecel flags | note |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
`

// appendTo adds the run's row to the markdown file at path, at the end of the table of
// sharded runs or of single-process runs, starting the table when the file has none.
func (r *results) appendTo(path string) error {
	if r.sharding {
		return addRow(path, shardedHeading, shardedHeader, r.shardedRow())
	}
	return addRow(path, runsHeading, docHeader, r.row())
}

// flags is the kubecel flags column: what the run added to `kubecel run`.
func (r *results) flags() string {
	if r.kubecelArgs == "" {
		return "defaults"
	}
	return r.kubecelArgs
}

// row is the run's row of the single-process table.
func (r *results) row() string {
	deleteLimit, deletion := "skipped", "skipped"
	if r.deleteLimit > 0 {
		deleteLimit = fmt.Sprintf("%.1f", r.deleteLimit.Seconds())
	}
	if r.deletion > 0 {
		deletion = fmt.Sprintf("%.1f (%s)", r.deletion.Seconds(), times(r.deleteRatio()))
	}
	one := r.replicas[0]
	return fmt.Sprintf("| %s | %d | %d | %.1f | %s | %s -> %s | %s | %s | %.1f (%s / %s) | %.2f | %d | %.1f | %s | %s | %.0f / %.0f (%.0f) | %.1f / %.1f | %s | %s |\n",
		time.Now().UTC().Format("2006-01-02 15:04"), r.n, r.machine.cpus, r.machine.memGiB, r.machine.goVersion,
		r.machine.load, r.machine.loadAfter, cell(r.baseline), cell(r.limit), r.converge.Seconds(), times(r.limitRatio()), times(r.ratio()),
		r.writesPerParent(), r.steadyWrites.total(), r.update.Seconds(), deleteLimit, deletion,
		mb(one.peak), mb(one.settled), mb(one.settledAnon), r.cpuConverge(), r.cpuTotal(), r.flags(), joinNotes(r.note, r.pairsNote(), r.wallNote()))
}

// wallNote gives the bench's wall time, which the goal for `make bench` is judged on
// (goals.go).
func (r *results) wallNote() string {
	if r.total == 0 {
		return ""
	}
	if r.noNoisy {
		return fmt.Sprintf("bench wall time %.1f s %s", r.total.Seconds(), withoutNoisy)
	}
	return fmt.Sprintf("bench wall time %.1f s", r.total.Seconds())
}

// withoutNoisy follows the wall time of a run without the noisy-neighbour phase.
const withoutNoisy = "without the noisy-neighbour phase"

// joinNotes joins the non-empty notes with "; ".
func joinNotes(notes ...string) string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "; ")
}
