package main

import (
	"errors"
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
	note        string
	total       time.Duration

	baseline, converge, update, deletion time.Duration
	// limit is the same-writes limit, deleteLimit the direct-delete limit (limits.go).
	limit, deleteLimit               time.Duration
	writes, steadyWrites             writeCounts
	steadyReconciles                 int
	peakRSS, convergeRSS, settledRSS uint64
	settledAnon                      uint64
	cpuConverge, cpuSteady, cpuTotal float64
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

func (r *results) ratio() float64 { return r.converge.Seconds() / r.baseline.Seconds() }

// limitRatio is convergence over the same-writes limit.
func (r *results) limitRatio() float64 { return r.converge.Seconds() / r.limit.Seconds() }

// deleteRatio is deletion over the direct-delete limit; 0 when either was skipped.
func (r *results) deleteRatio() float64 {
	if r.deletion <= 0 || r.deleteLimit <= 0 {
		return 0
	}
	return r.deletion.Seconds() / r.deleteLimit.Seconds()
}

func (r *results) writesPerParent() float64 { return float64(r.writes.total()) / float64(r.n) }

func (r *results) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nkubecel bench, N=%d parents (%d children), %d CPUs, load %s -> %s\n", r.n, 3*r.n, r.machine.cpus, r.machine.load, r.machine.loadAfter)
	fmt.Fprintf(tw, "measure\tvalue\tgoal\n")
	row := func(name, value, goal string) { fmt.Fprintf(tw, "%s\t%s\t%s\n", name, value, goal) }
	row("1 baseline: children only (direct apply, 16 clients)", secs(r.baseline), "")
	row("1 same-writes limit (parent, children, status; 16 clients)", secs(r.limit), "")
	if r.deleteLimit > 0 {
		row("1 direct-delete limit (children, then parent; 16 clients)", secs(r.deleteLimit), "")
	}
	row("2 convergence", fmt.Sprintf("%s (%.2fx same-writes limit, %.2fx baseline)", secs(r.converge), r.limitRatio(), r.ratio()), "<= 1.15x same-writes limit")
	row("3 writes per parent", fmt.Sprintf("%.2f (%s)", r.writesPerParent(), r.writes), "<= 4 (children + 1)")
	row("4 steady-state writes", fmt.Sprintf("%d (%d reconciles)", r.steadyWrites.total(), r.steadyReconciles), "0")
	row("5 update propagation", secs(r.update), "")
	if r.deletion > 0 {
		row("6 deletion", fmt.Sprintf("%s (%.2fx direct-delete limit)", secs(r.deletion), r.deleteRatio()), "<= 1.5x direct-delete limit")
	} else {
		row("6 deletion", "skipped", "")
	}
	row("7 RSS peak / converged / settled", fmt.Sprintf("%.0f / %.0f / %.0f MB (settled anonymous %.0f MB)", mb(r.peakRSS), mb(r.convergeRSS), mb(r.settledRSS), mb(r.settledAnon)), "settled < 150 MB at N=10,000")
	row("7 CPU convergence / total", fmt.Sprintf("%.1f s / %.1f s", r.cpuConverge, r.cpuTotal), "")
	row("bench wall time", secs(r.total), "")
	tw.Flush()
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

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

// appendTo appends the run's row to the markdown file at path, starting the table when
// the file does not have it yet.
func (r *results) appendTo(path string) error {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if !strings.Contains(string(data), runsHeading) {
		if _, err := io.WriteString(f, docHeader); err != nil {
			f.Close()
			return err
		}
	}
	flags := r.kubecelArgs
	if flags == "" {
		flags = "defaults"
	}
	deleteLimit, deletion := "skipped", "skipped"
	if r.deleteLimit > 0 {
		deleteLimit = fmt.Sprintf("%.1f", r.deleteLimit.Seconds())
	}
	if r.deletion > 0 {
		deletion = fmt.Sprintf("%.1f (%.2fx)", r.deletion.Seconds(), r.deleteRatio())
	}
	row := fmt.Sprintf("| %s | %d | %d | %.1f | %s | %s -> %s | %.1f | %.1f | %.1f (%.2fx / %.2fx) | %.2f | %d | %.1f | %s | %s | %.0f / %.0f (%.0f) | %.1f / %.1f | %s | %s |\n",
		time.Now().UTC().Format("2006-01-02 15:04"), r.n, r.machine.cpus, r.machine.memGiB, r.machine.goVersion,
		r.machine.load, r.machine.loadAfter, r.baseline.Seconds(), r.limit.Seconds(), r.converge.Seconds(), r.limitRatio(), r.ratio(),
		r.writesPerParent(), r.steadyWrites.total(), r.update.Seconds(), deleteLimit, deletion,
		mb(r.peakRSS), mb(r.settledRSS), mb(r.settledAnon), r.cpuConverge, r.cpuTotal, flags, r.note)
	if _, err := io.WriteString(f, row); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
