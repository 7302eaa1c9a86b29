package main

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The goals table of docs/benchmarks.md is made from the rows of its run tables by
// goalsTable, never typed: TestGoalsTable fails when the document's table differs from
// what the rows give, and `go test ./cmd/bench -run TestGoalsTable -update` rewrites it.
// Each goal is judged on the latest rows that measure it, which its cell names; a row
// whose note begins "before:" measured an older binary for a comparison and is left out.

// goalsHeading starts the section whose first table is the goals table.
const goalsHeading = "\n## Goals (N=1,000 unless stated)\n"

// runRow is one row of a run table, its cells by column name.
type runRow map[string]string

func (r runRow) date() string { return r["date (UTC)"] }

// num is the first number of a cell ("9.2 (1.30x / 1.66x)" -> 9.2); ok is false for a
// cell without one (skipped).
func (r runRow) num(column string) (float64, bool) {
	m := firstNumber.FindString(r[column])
	if m == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(m, ",", ""), 64)
	return f, err == nil
}

var firstNumber = regexp.MustCompile(`[0-9][0-9,]*(\.[0-9]+)?`)

// runs returns the rows of the first table after heading, by column name.
func runs(doc, heading string) []runRow {
	at := strings.Index(doc, heading)
	if at < 0 {
		return nil
	}
	var head []string
	var out []runRow
	for _, line := range strings.Split(doc[at+len(heading):], "\n") {
		if !strings.HasPrefix(line, "|") {
			if head != nil {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case head == nil:
			head = cells
		case strings.HasPrefix(cells[0], "---"):
		default:
			r := runRow{}
			for i, c := range cells {
				if i < len(head) {
					r[head[i]] = c
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// latest is the last row for which keep is true, or nil.
func latest(rows []runRow, keep func(runRow) bool) runRow {
	for i := len(rows) - 1; i >= 0; i-- {
		if keep(rows[i]) {
			return rows[i]
		}
	}
	return nil
}

// pairRatios reads a pairs note: "convergence x limit 1.15x 1.38x 0.72x, median 1.15x".
func pairRatios(note, what string) (ratios []string, median float64, ok bool) {
	m := regexp.MustCompile(regexp.QuoteMeta(what) + ` x limit ((?:[0-9.]+x ?)+), median ([0-9.]+)x`).FindStringSubmatch(note)
	if m == nil {
		return nil, 0, false
	}
	median, err := strconv.ParseFloat(m[2], 64)
	return strings.Fields(m[1]), median, err == nil
}

// cpuRatios reads the controller's CPU against the clients' from a pairs note:
// "controller CPU x clients' CPU 0.95x 0.92x 1.01x, median 0.95x".
func cpuRatios(note string) (ratios []string, median float64, ok bool) {
	m := regexp.MustCompile(`controller CPU x clients' CPU ((?:(?:[0-9.]+x|skipped) ?)+), median ([0-9.]+)x`).FindStringSubmatch(note)
	if m == nil {
		return nil, 0, false
	}
	median, err := strconv.ParseFloat(m[2], 64)
	return strings.Fields(m[1]), median, err == nil
}

// cpuGoal judges the controller's CPU for the same writes against what the bench's
// clients spend on them, on the median of the pairs of the latest N=1,000 row that
// measured both.
func cpuGoal(rows []runRow) ([]goal, error) {
	const name = "controller CPU for the same writes at most 1.0x what the bench's 16 clients spend on them"
	r := latest(rows, func(r runRow) bool {
		_, _, ok := cpuRatios(r["note"])
		return plainRun(1000)(r) && ok
	})
	if r == nil {
		return nil, fmt.Errorf("goal %q: no row at N=1,000 measures it", name)
	}
	ratios, median, _ := cpuRatios(r["note"])
	measured := fmt.Sprintf("N=1,000: median **%.2fx** over %d pairs (%s; row %s)", median, len(ratios), strings.Join(ratios, " "), r.date())
	return []goal{{name, measured, verdict(median <= 1.0)}}, nil
}

// goal is one row of the goals table.
type goal struct{ name, measured, met string }

// goalsTable makes the goals table (its head included) from the rows of doc's runRow tables.
func goalsTable(doc string) (string, error) {
	single, sharded, noisy := runs(doc, runsHeading), runs(doc, shardedHeading), runs(doc, noisyHeading)
	if len(single) == 0 || len(sharded) == 0 || len(noisy) == 0 {
		return "", fmt.Errorf("the document lacks a run table: %d, %d and %d rows", len(single), len(sharded), len(noisy))
	}
	// Rows of an older binary, run beside the current one for a comparison ("before:"
	// notes), say nothing of today's code.
	single = slices.DeleteFunc(single, func(r runRow) bool { return strings.HasPrefix(r["note"], "before:") })
	var goals []goal
	for _, make := range []func() ([]goal, error){
		func() ([]goal, error) {
			return pairsGoal(single, "convergence", "convergence within 1.15x the same-writes limit", 1.15)
		},
		func() ([]goal, error) {
			return pairsGoal(single, "deletion", "deletion of every child within 1.5x the direct-delete limit", 1.5)
		},
		func() ([]goal, error) { return cpuGoal(single) },
		func() ([]goal, error) { return writesGoals(single) },
		func() ([]goal, error) { return refsGoal(single) },
		func() ([]goal, error) { return rssGoal(single) },
		func() ([]goal, error) { return wallGoal(single) },
		func() ([]goal, error) { return noisyGoals(noisy) },
		func() ([]goal, error) { return shardingGoal(sharded) },
		func() ([]goal, error) { return editGoal(runs(doc, editHeading)), nil },
		func() ([]goal, error) { return crdsGoals(runs(doc, crdsHeading)), nil },
	} {
		g, err := make()
		if err != nil {
			return "", err
		}
		goals = append(goals, g...)
	}
	var b strings.Builder
	b.WriteString("| goal | measured | met? |\n|---|---|---|\n")
	for _, g := range goals {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", g.name, g.measured, g.met)
	}
	return b.String(), nil
}

// sizes are the numbers of parents the goals are measured at.
var sizes = []int{1000, 10000}

// plainRun reports whether a row ran the bench's own rule (no refs) at default flags.
func plainRun(n int) func(runRow) bool {
	return func(r runRow) bool {
		return r["N"] == strconv.Itoa(n) && r["kubecel flags"] == "defaults" && !strings.HasPrefix(r["note"], "refs:")
	}
}

// pairedRun reports whether a row is a plain runRow at n measured in pairs.
func pairedRun(n int) func(runRow) bool {
	return func(r runRow) bool {
		_, _, ok := pairRatios(r["note"], "convergence")
		return plainRun(n)(r) && ok
	}
}

func verdict(met bool) string {
	if met {
		return "**met**"
	}
	return "**not met**"
}

// pairsGoal judges a ratio to a limit on the median of the pairs of the latest paired
// row at each size.
func pairsGoal(rows []runRow, what, name string, bound float64) ([]goal, error) {
	var parts []string
	met := true
	for _, n := range sizes {
		r := latest(rows, pairedRun(n))
		if r == nil {
			return nil, fmt.Errorf("goal %q: no row at N=%d with pairs", name, n)
		}
		ratios, median, _ := pairRatios(r["note"], what)
		parts = append(parts, fmt.Sprintf("N=%s: median **%.2fx** over %d pairs (%s; row %s)", thousands(n), median, len(ratios), strings.Join(ratios, " "), r.date()))
		met = met && median <= bound
	}
	return []goal{{name, strings.Join(parts, "; "), verdict(met)}}, nil
}

// writesGoals reads the writes per parent and at steady state of the paired rows.
func writesGoals(rows []runRow) ([]goal, error) {
	var writes, steady []string
	metWrites, metSteady := true, true
	for _, n := range sizes {
		r := latest(rows, pairedRun(n))
		if r == nil {
			return nil, fmt.Errorf("no row at N=%d with pairs", n)
		}
		w, _ := r.num("writes/parent")
		s, ok := r.num("steady writes")
		writes = append(writes, fmt.Sprintf("**%s** at N=%s (row %s)", r["writes/parent"], thousands(n), r.date()))
		steady = append(steady, fmt.Sprintf("**%s** at N=%s, after %s forced reconciles (row %s)", r["steady writes"], thousands(n), thousands(n), r.date()))
		metWrites = metWrites && w <= 4
		metSteady = metSteady && ok && s == 0
	}
	return []goal{
		{"at most children + 1 = 4 writes per parent", strings.Join(writes, ", "), verdict(metWrites)},
		{"zero writes at steady state", strings.Join(steady, ", "), verdict(metSteady)},
	}, nil
}

// refsGoal reads the latest rows of each size whose rule reads refs.
func refsGoal(rows []runRow) ([]goal, error) {
	var parts []string
	met := true
	for _, n := range sizes {
		r := latest(rows, func(r runRow) bool { return r["N"] == strconv.Itoa(n) && strings.HasPrefix(r["note"], "refs:") })
		if r == nil {
			return nil, fmt.Errorf("no refs row at N=%d", n)
		}
		w, _ := r.num("writes/parent")
		s, ok := r.num("steady writes")
		part := fmt.Sprintf("N=%s: %s writes per parent, %s at rest", thousands(n), r["writes/parent"], r["steady writes"])
		met = met && w <= 4 && ok && s == 0
		if n == 10000 {
			settled, anon := settledRSS(r)
			part += fmt.Sprintf(", settled RSS **%s MB** (%s MB anonymous)", settled, anon)
			mb, _ := strconv.ParseFloat(settled, 64)
			met = met && mb < 150
		}
		parts = append(parts, part+" (row "+r.date()+")")
	}
	return []goal{{"with refs (`--refs`, each parent reads one ConfigMap): 4 writes per parent, 0 at rest, settled RSS under 150 MB at N=10,000", strings.Join(parts, "; "), verdict(met)}}, nil
}

var rssCell = regexp.MustCompile(`^([0-9.]+) / ([0-9.]+) \(([0-9.]+)\)$`)

// settledRSS reads "peak / settled (anonymous)".
func settledRSS(r runRow) (settled, anon string) {
	m := rssCell.FindStringSubmatch(r["RSS peak / settled (anon)"])
	if m == nil {
		return "?", "?"
	}
	return m[2], m[3]
}

func rssGoal(rows []runRow) ([]goal, error) {
	r := latest(rows, plainRun(10000))
	if r == nil {
		return nil, fmt.Errorf("no plain row at N=10,000")
	}
	m := rssCell.FindStringSubmatch(r["RSS peak / settled (anon)"])
	if m == nil {
		return nil, fmt.Errorf("row %s: RSS cell %q", r.date(), r["RSS peak / settled (anon)"])
	}
	settled, _ := strconv.ParseFloat(m[2], 64)
	return []goal{{"settled RSS under 150 MB at N=10,000", fmt.Sprintf("**%s MB** (%s MB anonymous), peak %s MB (row %s)", m[2], m[3], m[1], r.date()), verdict(settled < 150)}}, nil
}

var wallNote = regexp.MustCompile(`bench wall time ([0-9.]+) s`)

// wallGoal reads the bench's wall time, which rows note since it was added to them.
func wallGoal(rows []runRow) ([]goal, error) {
	name := "`make bench` under 15 minutes at N=1,000"
	r := latest(rows, func(r runRow) bool {
		return r["N"] == "1000" && wallNote.MatchString(r["note"]) && !strings.Contains(r["note"], withoutNoisy)
	})
	if r == nil {
		return []goal{{name, "not in a row yet: rows note the bench's wall time since it was added to them", "not measured"}}, nil
	}
	secs, _ := strconv.ParseFloat(wallNote.FindStringSubmatch(r["note"])[1], 64)
	return []goal{{name, fmt.Sprintf("**%d m %02d s** (row %s)", int(secs)/60, int(secs)%60, r.date()), verdict(secs < 15*60)}}, nil
}

// pairNumber reads "pair 3" in a noisy row's note.
var pairNumber = regexp.MustCompile(`pair ([0-9]+)\)`)

// noisyGoals returns the light and the heavy tenant's goals: both are judged on the runs made in pairs with a runRow of the binary before fair queuing
// ("before:" notes).
func noisyGoals(rows []runRow) ([]goal, error) {
	after, before := map[string]runRow{}, map[string]runRow{}
	var order []string
	for _, r := range rows {
		m := pairNumber.FindStringSubmatch(r["note"])
		if m == nil {
			continue
		}
		if strings.HasPrefix(r["note"], "before:") {
			before[m[1]] = r
		} else {
			after[m[1]] = r
			order = append(order, m[1])
		}
	}
	var dates, buildP99, teardownP99, beforeBuild, beforeTeardown []string
	var medians []float64
	var lowRatio, highRatio float64
	p99Met, heavyMet := true, true
	worst := -1.0
	for _, p := range order {
		r, b := after[p], before[p]
		if b == nil {
			return nil, fmt.Errorf("noisy row %s (pair %s) has no before row", r.date(), p)
		}
		dates = append(dates, r.date())
		idle, _ := lightTimes(r["light idle"])
		for _, col := range []string{"light during build", "light during teardown"} {
			median, p99 := lightTimes(r[col])
			_, beforeP99 := lightTimes(b[col])
			p99Met = p99Met && p99 < 2
			medians = append(medians, median)
			ratio := median / idle
			if lowRatio == 0 || ratio < lowRatio {
				lowRatio = ratio
			}
			highRatio = max(highRatio, ratio)
			if col == "light during build" {
				buildP99, beforeBuild = append(buildP99, fmt.Sprintf("%.2f", p99)), append(beforeBuild, fmt.Sprintf("%.2f", beforeP99))
			} else {
				teardownP99, beforeTeardown = append(teardownP99, fmt.Sprintf("%.2f", p99)), append(beforeTeardown, fmt.Sprintf("%.2f", beforeP99))
			}
		}
		for _, col := range []string{"heavy build", "heavy teardown"} {
			now, _ := r.num(col)
			was, _ := b.num(col)
			worst = max(worst, now/was-1)
			heavyMet = heavyMet && now <= was*1.1
		}
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("no noisy-neighbour row measured in pairs")
	}
	within2x := highRatio <= 2
	light := goal{
		"noisy neighbour: the light tenant within 2x its idle time and under 2 s at p99 while the heavy one builds and deletes 16 x 1,000 children",
		fmt.Sprintf("p99 **%s s** while it builds, **%s s** while it is torn down (rows %s); before fair queuing: %s s and %s s. Medians %.2f to %.2f s: %.0f to %.0f times the idle median",
			and(buildP99), and(teardownP99), and(dates), and(beforeBuild), and(beforeTeardown), slices.Min(medians), slices.Max(medians), lowRatio, highRatio),
		fmt.Sprintf("p99 %s; within 2x of idle %s", verdict(p99Met), verdict(within2x)),
	}
	heavy := goal{"noisy neighbour: the heavy tenant no more than 10% slower than before fair queuing",
		fmt.Sprintf("build and teardown at most **%+.0f%%** against the run before in each pair (rows %s)", worst*100, and(dates)), verdict(heavyMet)}
	return []goal{light, heavy}, nil
}

var lightCell = regexp.MustCompile(`^([0-9.]+) / ([0-9.]+)`)

// lightTimes reads "median / p99 (operations)".
func lightTimes(cell string) (median, p99 float64) {
	m := lightCell.FindStringSubmatch(cell)
	if m == nil {
		return 0, 0
	}
	median, _ = strconv.ParseFloat(m[1], 64)
	p99, _ = strconv.ParseFloat(m[2], 64)
	return median, p99
}

// shardingGoal reads the four-replica rows: the speedup over the latest one-replica row
// of the same size and flags, which the bench writes in "x 1 replica".
func shardingGoal(rows []runRow) ([]goal, error) {
	type series struct {
		key    string
		cells  []string
		latest float64
	}
	var all []*series
	byKey := map[string]*series{}
	for _, r := range rows {
		speedup, ok := r.num("x 1 replica")
		if r["replicas"] != "4" || !ok || !strings.HasSuffix(r["x 1 replica"], ")") {
			continue
		}
		key := "`" + r["kubecel flags"] + "`"
		if r["N"] != "1000" {
			key += " at N=" + thousands(atoi(r["N"]))
		}
		s := byKey[key]
		if s == nil {
			s = &series{key: key}
			byKey[key] = s
			all = append(all, s)
		}
		s.cells = append(s.cells, fmt.Sprintf("%.2fx (row %s)", speedup, r.date()))
		s.latest = speedup
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("no four-replica row compared with one replica")
	}
	var parts, metIn, notMetIn []string
	for _, s := range all {
		parts = append(parts, s.key+" "+strings.Join(s.cells, ", "))
		if s.latest >= 3 {
			metIn = append(metIn, s.key)
		} else {
			notMetIn = append(notMetIn, s.key)
		}
	}
	var met []string
	if len(notMetIn) > 0 {
		met = append(met, "**not met** with "+and(notMetIn))
	}
	if len(metIn) > 0 {
		met = append(met, "met with "+and(metIn))
	}
	return []goal{{"at least 3x convergence from 1 to 4 sharded replicas (`--replicas`, see *Sharding*)",
		"from one replica to four, by flags per replica: " + strings.Join(parts, "; "), strings.Join(met, "; ")}}, nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// thousands writes n with a comma between thousands: 10,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// and joins a list as prose: "a, b and c".
func and(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// goalsIn returns the goals table of doc and where it starts and ends.
func goalsIn(doc string) (table string, start, end int, err error) {
	at := strings.Index(doc, goalsHeading)
	if at < 0 {
		return "", 0, 0, fmt.Errorf("no heading %q", strings.TrimSpace(goalsHeading))
	}
	start = strings.Index(doc[at:], "\n| goal |")
	if start < 0 {
		return "", 0, 0, fmt.Errorf("no goals table after %q", strings.TrimSpace(goalsHeading))
	}
	start += at + 1
	end = start
	for end < len(doc) && doc[end] == '|' {
		nl := strings.IndexByte(doc[end:], '\n')
		if nl < 0 {
			end = len(doc)
			break
		}
		end += nl + 1
	}
	return doc[start:end], start, end, nil
}
