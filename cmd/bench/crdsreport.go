package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// crdsOnly runs the --crds phase, prints its figures and adds its row.
func crdsOnly(ctx context.Context, b *bench, m machine) error {
	res, err := runCRDs(ctx, b, b.cfg.crds)
	if err != nil {
		return err
	}
	res.machine, res.kubecelArgs, res.note = m, b.cfg.flagsColumn(), b.cfg.note
	res.loadBefore, res.loadAfter = m.load, readLoad()
	res.date = time.Now().UTC().Format("2006-01-02 15:04")
	res.print(os.Stdout)
	if b.cfg.doc == "" {
		return nil
	}
	if err := addRow(b.cfg.doc, crdsHeading, crdsHeader, res.row()); err != nil {
		return err
	}
	logf("appended a row to the --crds table of %s", b.cfg.doc)
	return nil
}

// crdsResult is what the --crds phase measured.
type crdsResult struct {
	// k is the number of measured rules (and CRDs); parents all parents at the start.
	k, parents int
	// rulesRunning is from the process start until K + 1 rules ran; rulesKnown is false
	// when the binary has no kubecel_active_rules (rulesRunning is then not measured).
	rulesRunning time.Duration
	rulesKnown   bool
	// converged is from the process start until every parent was converged.
	converged time.Duration
	// writes are the controller's writes from the start until it was quiet, by what
	// they wrote; ruleWrites the same by rule.
	writes, ruleWrites         writeCounts
	steadyWrites               writeCounts
	steadyReconciles           int
	rssConverged, rssPeak      uint64
	rssSettled, rssSettledAnon uint64
	cpuConverge, cpuTotal      float64
	// machineCPU is where the machine's CPU went from the start until every parent
	// converged: the controller, the control plane, the bench.
	machineCPU                  cpuUse
	lateRunning, lateConverged  time.Duration // from the late CRD's create
	reload, rollout             crdsEdit
	rolloutSteps                []time.Duration
	rolloutPhase                string
	waits                       [3]lockFigure // the late CRD, the reload, the rollout
	overall                     string        // the longest wait of the whole run
	loadPatches                 int
	machine                     machine
	kubecelArgs, note           string
	loadBefore, loadAfter, date string
}

// writesPerParent is the writes per measured parent (one per measured rule) from the
// start until the controller was quiet.
func (r *crdsResult) writesPerParent() float64 {
	if r.k == 0 {
		return 0
	}
	n := r.ruleWrites.total() - r.ruleWrites[rolloutRule] - r.ruleWrites[lateRule] - r.ruleWrites[""]
	return float64(n) / float64(r.k)
}

// rulesCell is the time until the rules ran, or "n/a".
func (r *crdsResult) rulesCell() string {
	if !r.rulesKnown {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", r.rulesRunning.Seconds())
}

func (r *crdsResult) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nkubecel bench --crds %d: %d rules on %d CRDs, one parent each, and a rollout rule with %d parents and a late rule; load %s -> %s\n",
		r.k, r.k, r.k, rolloutParents, r.loadBefore, r.loadAfter)
	fmt.Fprintf(tw, "measure\tvalue\tgoal at K=1,000 (issues 39, 42)\n")
	row := func(name, value, goal string) { fmt.Fprintf(tw, "%s\t%s\t%s\n", name, value, goal) }
	row("start until every rule runs (s)", r.rulesCell(), "<= 10")
	row("start until every parent is converged", fmt.Sprintf("%s (%d parents)", secs(r.converged), r.parents), "<= 20 s")
	row("writes per measured parent", fmt.Sprintf("%.2f; %.2f per parent of the rollout rule; all: %s", r.writesPerParent(), float64(r.ruleWrites[rolloutRule])/rolloutParents, parentsAsOne(r.writes)), "<= 4")
	row("writes at rest", fmt.Sprintf("%d (%d reconciles)", r.steadyWrites.total(), r.steadyReconciles), "0")
	row("RSS peak / converged / settled", fmt.Sprintf("%.0f / %.0f / %.0f MB (settled anonymous %.0f MB)", mb(r.rssPeak), mb(r.rssConverged), mb(r.rssSettled), mb(r.rssSettledAnon)), "settled <= 200 MiB")
	row("CPU to converge / total", fmt.Sprintf("%.1f s / %.1f s", r.cpuConverge, r.cpuTotal), "")
	row("machine CPU until converged", r.machineCPU.String(), "")
	row("late CRD: its rule runs / its parent converged", fmt.Sprintf("%s / %s after the CRD's create", secs(r.lateRunning), secs(r.lateConverged)), "")
	edit := func(e crdsEdit) string {
		return fmt.Sprintf("%s after the controller read the file (%s after the write, %s after the reload's log line)", secs(e.took), secs(e.sinceWrite), secs(e.sinceReload))
	}
	row("reload of one rule: its parent at the edit", fmt.Sprintf("%s; writes to it %d, to the other rules %d", edit(r.reload), r.reload.own, r.reload.others), "<= 2 s, 0 to the others")
	row("rollout edit: every parent at the edit", fmt.Sprintf("%s; steps at %s; phase %s; writes to it %d, to the other rules %d",
		edit(r.rollout), stepTimes(r.rolloutSteps), r.rolloutPhase, r.rollout.own, r.rollout.others), "")
	for i, name := range []string{"the late CRD appears", "the reload", "the rollout steps"} {
		f := r.waits[i]
		row("longest lock wait: "+name, fmt.Sprintf("%s (%.0f reconciles in %s)", f.longest, f.reconciles, secs(f.window)), "< 10 ms at K=200")
	}
	row("longest lock wait of the whole run", r.overall, "")
	row("load: parents touched", strconv.Itoa(r.loadPatches), "")
	tw.Flush()
}

// parentsAsOne adds up the writes to the parents of every kind under "parents", so that
// K kinds make one count: "patch configmaps: 70, patch parents/status: 70, ...".
func parentsAsOne(w writeCounts) writeCounts {
	out := writeCounts{}
	for key, n := range w {
		verb, res, _ := strings.Cut(key, " ")
		kind, sub, _ := strings.Cut(res, "/")
		if kind != "configmaps" && kind != "services" {
			res = "parents"
			if sub != "" {
				res += "/" + sub
			}
		}
		out[verb+" "+res] += n
	}
	return out
}

// crdsHeading starts the table of --crds runs in docs/benchmarks.md.
const crdsHeading = "\n## Runs with K rules on K CRDs\n"

const crdsHeader = crdsHeading + `
Appended by ` + "`make bench BENCH_FLAGS='--crds K'`" + ` (cmd/bench, crds.go), which runs that phase
alone. K rules on K CRDs with one parent each, a rule with a rollout policy on a CRD of
its own with 20 parents, and a rule whose CRD is created during the run: the controller
starts with K + 2 rules, K + 1 of which can run, and K + 20 parents, all created before
it starts, from one rules file (with more than 1,000 rules, the controller gets
` + "`--max-rules-per-source=K+2`" + `, which the kubecel flags column does not show: one source
of that many rules is the bench's shape, not a tuning). Times in seconds from the controller's process start: until K + 1 rules run
(` + "`kubecel_active_rules`" + `), and until every parent is converged (Ready and Synced for its
generation, its ConfigMap and Service there). Writes per parent: the controller's write
requests in the bench namespace (audit log) to the K measured parents and their
children, from the start until it sent nothing for 3 s, over K; at rest: every parent
touched and reconciled, then 60 s idle. RSS in MB (10^6 bytes), peak over the run /
settled after the idle (anonymous). CPU is the controller's user+system seconds.
Reload: the bench rewrites the rules file with an edit of one of the K rules; from the
controller's first read of it (seen through inotify; the controller re-reads the file
every 2 s) until that rule's parent shows the edit (from the bench's write in
parentheses), and the controller's writes to the other rules' parents and children
until it was quiet. Rollout: the same for an edit of the rule with the policy (steps
10%, 50%, 100%, 2 s pause), until all of its 20 parents show it, with the times at
which the parents at the edit first reached each step. Lock wait: the highest bucket of
` + "`kubecel_reconcile_lock_wait_seconds`" + ` that gained samples while the late CRD appeared,
during the reload and during the rollout (each window at least 30 s, with 10 parents
touched a second so that workers reconcile), and over the whole run; n/a where the
binary has no such histogram. Load is the 1/5/15-minute load average before -> after
the run.

| date (UTC) | K | CPUs | load | rules running | parents converged | writes/parent | writes at rest | RSS peak / settled (anon) | CPU conv. / total | reload (from the write) | writes to other rules | rollout | lock wait: CRD / reload / rollout / run | kubecel flags | note |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
`

// row is the run's row of the --crds table.
func (r *crdsResult) row() string {
	flags := r.kubecelArgs
	if flags == "" {
		flags = "defaults"
	}
	return fmt.Sprintf("| %s | %d | %d | %s -> %s | %s | %.1f | %.2f | %d | %.0f / %.0f (%.0f) | %.1f / %.1f | %.1f (%.1f) | %d | %.1f (%s) | %s / %s / %s / %s | %s | %s |\n",
		r.date, r.k, r.machine.cpus, r.loadBefore, r.loadAfter, r.rulesCell(), r.converged.Seconds(), r.writesPerParent(), r.steadyWrites.total(),
		mb(r.rssPeak), mb(r.rssSettled), mb(r.rssSettledAnon), r.cpuConverge, r.cpuTotal,
		r.reload.took.Seconds(), r.reload.sinceWrite.Seconds(), r.reload.others,
		r.rollout.took.Seconds(), strings.TrimSuffix(stepTimes(r.rolloutSteps), " s"),
		r.waits[0].longest, r.waits[1].longest, r.waits[2].longest, r.overall, flags, r.note)
}

var (
	settledCell = regexp.MustCompile(`^[0-9.]+ / ([0-9.]+)`)
	reloadCell  = regexp.MustCompile(`^([0-9.]+) \(([0-9.]+)\)$`)
)

// miB is how many MB (10^6 bytes, the tables' unit) a MiB is.
const miB = 1.048576

// crdsGoals judges the goals of issues 39 and 42 on the latest --crds rows at K=1,000
// and K=200 with the default flags (a "before:" row of an older binary left out).
func crdsGoals(rows []runRow) []goal {
	at := func(k string) runRow {
		return latest(rows, func(r runRow) bool {
			return r["K"] == k && r["kubecel flags"] == "defaults" && !strings.HasPrefix(r["note"], "before:")
		})
	}
	startName := "1,000 rules on 1,000 CRDs, one parent each (`--crds 1000`): every rule running within 10 s of the start, every parent converged within 20 s, at most 4 writes per parent, 0 at rest, settled RSS at most 200 MiB"
	reloadName := "a reload that edits one of 1,000 rules reaches its parent within 2 s and writes nothing to the other rules (`--crds 1000`)"
	locksName := "with 200 rules running, no reconcile waits 10 ms or more on the controller's locks while a CRD appears, the rules reload and a rollout steps (`--crds 200`)"
	r := at("1000")
	var out []goal
	if r == nil {
		out = append(out, goal{startName, "not in a row yet: no `--crds` row at K=1,000", "not measured"},
			goal{reloadName, "not in a row yet: no `--crds` row at K=1,000", "not measured"})
	} else {
		running, runningOK := r.num("rules running")
		conv, _ := r.num("parents converged")
		writes, _ := r.num("writes/parent")
		rest, restOK := r.num("writes at rest")
		var settled float64
		if m := settledCell.FindStringSubmatch(r["RSS peak / settled (anon)"]); m != nil {
			settled, _ = strconv.ParseFloat(m[1], 64)
		}
		out = append(out, goal{startName,
			fmt.Sprintf("rules running after **%s s**, parents converged after **%s s**, **%s** writes per parent, **%s** at rest, settled RSS **%.0f MiB** (row %s)",
				r["rules running"], r["parents converged"], r["writes/parent"], r["writes at rest"], settled/miB, r.date()),
			fmt.Sprintf("running %s; converged %s; writes %s; at rest %s; RSS %s", verdict(runningOK && running <= 10), verdict(conv <= 20),
				verdict(writes <= 4), verdict(restOK && rest == 0), verdict(settled > 0 && settled <= 200*miB))})
		m := reloadCell.FindStringSubmatch(r["reload (from the write)"])
		others, othersOK := r.num("writes to other rules")
		if m == nil || !othersOK {
			out = append(out, goal{reloadName, fmt.Sprintf("row %s does not read as a `--crds` row", r.date()), "not measured"})
		} else {
			took, _ := strconv.ParseFloat(m[1], 64)
			out = append(out, goal{reloadName,
				fmt.Sprintf("its parent at the edit **%s s** after the reload (%s s after the write); **%s** writes to the other rules (row %s)", m[1], m[2], r["writes to other rules"], r.date()),
				fmt.Sprintf("time %s; writes %s", verdict(took <= 2), verdict(others == 0))})
		}
	}
	if r := at("200"); r == nil {
		out = append(out, goal{locksName, "not in a row yet: no `--crds` row at K=200", "not measured"})
	} else {
		cells := strings.Split(r["lock wait: CRD / reload / rollout / run"], " / ")
		met := len(cells) == 4
		for _, c := range cells[:min(3, len(cells))] {
			bound, ok := waitBound(c)
			met = met && ok && bound <= 0.010
		}
		measured := fmt.Sprintf("longest waits, by the histogram's buckets: a CRD appears **%s**, the reload **%s**, the rollout **%s** (row %s)", at3(cells, 0), at3(cells, 1), at3(cells, 2), r.date())
		out = append(out, goal{locksName, measured, verdict(met)})
	}
	return out
}

// at3 is cells[i], or "?" when the cell is missing.
func at3(cells []string, i int) string {
	if i < len(cells) {
		return cells[i]
	}
	return "?"
}
