package main

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// editHeading starts the table of rules-edit runs in docs/benchmarks.md.
const editHeading = "\n## Runs of a rules edit\n"

const editHeader = editHeading + `
Appended by ` + "`make bench`" + ` with ` + "`--edit`" + ` (cmd/bench, edit.go), on the controller of the
other phases after the update phase. Times in seconds from the controller's log line of
the reload until every parent is at the edit (its config child and status show it; for
the rollout, every parent's Synced condition also names the new revision); "from the
write" is from the bench's write of the rules file instead (the controller re-reads it
every 2 s). Steps: when the parents at the new revision first reached 1%, 10%, 50% and
100% of N, from the reload. Writes per parent: the controller's write requests in the
bench namespace (audit log), immediate / rollout. Phase: the new revision's stored phase
once every parent was at it.

| date (UTC) | N | CPUs | load | immediate | rollout (x immediate) | steps | writes/parent | from the write | phase | kubecel flags | note |
|---|---|---|---|---|---|---|---|---|---|---|---|
`

func (e *editResult) print(w io.Writer, n int) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nrules edit: N=%d parents, times from the controller's reload (from the file write)\n", n)
	fmt.Fprintf(tw, "measure\tvalue\tgoal\n")
	row := func(name, value, goal string) { fmt.Fprintf(tw, "%s\t%s\t%s\n", name, value, goal) }
	run := func(r editRun) string {
		return fmt.Sprintf("%s (%s); %.2f writes per parent (%s)", secs(r.took), secs(r.sinceWrite), r.perParent(n), r.writes)
	}
	row("immediate edit (no rollout policy)", run(e.immediate), "")
	row("adding the policy, edit 2 (not compared)", run(e.policy), "")
	row("rollout edit, steps 1/10/50/100%, no pause", run(e.rollout), "")
	row("  rollout / immediate", times(e.ratio()), "<= 1.2x, same writes per parent")
	row("  steps reached after the reload", stepTimes(e.steps), "")
	row("  revision", fmt.Sprintf("%s -> %s, stored phase %s", e.from, e.to, e.phase), "Complete")
	tw.Flush()
}

// row is the run's row of the rules-edit table.
func (e *editResult) row(r *results) string {
	return fmt.Sprintf("| %s | %d | %d | %s -> %s | %.1f | %.1f (%s) | %s | %.2f / %.2f | %.1f / %.1f | %s | %s | %s |\n",
		time.Now().UTC().Format("2006-01-02 15:04"), r.n, r.machine.cpus, r.machine.load, r.machine.loadAfter,
		e.immediate.took.Seconds(), e.rollout.took.Seconds(), times(e.ratio()), strings.TrimSuffix(stepTimes(e.steps), " s"),
		e.immediate.perParent(r.n), e.rollout.perParent(r.n), e.immediate.sinceWrite.Seconds(), e.rollout.sinceWrite.Seconds(),
		e.phase, r.flags(), r.note)
}

var (
	ratioCell  = regexp.MustCompile(`\(([0-9.]+)x\)`)
	writesCell = regexp.MustCompile(`^([0-9.]+) / ([0-9.]+)$`)
)

// editGoal judges the goal on the latest rules-edit row at N=10,000 with the
// default flags.
func editGoal(rows []runRow) []goal {
	name := "a rollout of N=10,000 parents in steps 1/10/50/100%, no pause: the same writes per parent as an immediate edit, within 1.2x its time (`--edit`)"
	r := latest(rows, func(r runRow) bool { return r["N"] == "10000" && r["kubecel flags"] == "defaults" })
	if r == nil {
		return []goal{{name, "not in a row yet: no rules-edit row at N=10,000", "not measured"}}
	}
	ratio, w := ratioCell.FindStringSubmatch(r["rollout (x immediate)"]), writesCell.FindStringSubmatch(r["writes/parent"])
	if ratio == nil || w == nil {
		return []goal{{name, fmt.Sprintf("row %s does not read as a rules-edit row", r.date()), "not measured"}}
	}
	x, _ := strconv.ParseFloat(ratio[1], 64)
	immediate, _ := strconv.ParseFloat(w[1], 64)
	rolled, _ := strconv.ParseFloat(w[2], 64)
	measured := fmt.Sprintf("rollout **%sx** the immediate edit (%s s against %s s); writes per parent **%s** rollout, %s immediate (row %s)",
		ratio[1], strings.TrimSpace(strings.Split(r["rollout (x immediate)"], "(")[0]), r["immediate"], w[2], w[1], r.date())
	return []goal{{name, measured, fmt.Sprintf("time %s; writes %s", verdict(x <= 1.2), verdict(rolled <= immediate))}}
}
