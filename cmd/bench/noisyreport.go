package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// noisyHeading starts the table of noisy-neighbour runs in docs/benchmarks.md.
const noisyHeading = "\n## Runs with a noisy neighbour\n"

const noisyHeader = noisyHeading + `
Appended by ` + "`make bench`" + ` (cmd/bench, noisy.go), and alone by ` + "`--only-noisy`" + `. The heavy tenant
builds 16 parents of 1,000 ConfigMaps and then deletes them; the light tenant meanwhile
creates and edits one parent at a time (the bench's rule: three children and status),
an operation at most every 0.5 s while the heavy tenant works.
Light times are from a create or an edit until the parent's status shows it (Ready and
Synced for its generation), median / p99 in seconds, with the number of operations;
"idle" is the light tenant alone. Heavy times: from the first create until all 16,000
children exist, and from the first delete until none is left. RSS in MB: settled before
the heavy tenant, peak, and after its teardown. Yields: reconciles that handed their
worker on after a batch of writes.

| date (UTC) | CPUs | load | light idle | light during build | light during teardown | heavy build | heavy teardown | RSS before / peak / after | yields | kubecel flags | note |
|---|---|---|---|---|---|---|---|---|---|---|---|
`

// cellTimes is "median / p99 (n)" for a table cell.
func cellTimes(times []time.Duration) string {
	return fmt.Sprintf("%.2f / %.2f (%d)", quantile(times, 0.5).Seconds(), quantile(times, 0.99).Seconds(), len(times))
}

func (n *noisyResult) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nnoisy neighbour: the heavy tenant's %s, light parents one at a time\n", n.shape.label)
	fmt.Fprintf(tw, "measure\tvalue\tgoal\n")
	row := func(name, value, goal string) { fmt.Fprintf(tw, "%s\t%s\t%s\n", name, value, goal) }
	idle := quantile(n.idle, 0.5)
	row("light tenant alone", summary(n.idle), "")
	for _, p := range []struct {
		name  string
		times []time.Duration
	}{{"light tenant while the heavy one builds", n.build}, {"light tenant while the heavy one is torn down", n.teardown}} {
		row(p.name, fmt.Sprintf("%s; median %s idle", summary(p.times), times(over(quantile(p.times, 0.5), idle))), "median <= 2x idle, p99 < 2 s")
	}
	row("heavy tenant: build / teardown", fmt.Sprintf("%s / %s", secs(n.heavyBuild), secs(n.heavyTeardown)), "<= 1.1x before fair queuing")
	row("RSS before / peak / after", fmt.Sprintf("%.0f / %.0f / %.0f MB", mb(n.rssBefore), mb(n.rssPeak), mb(n.rssAfter)), "")
	row("yields", fmt.Sprintf("%.0f", n.yields), "")
	tw.Flush()
}

// row is the run's row of the noisy-neighbour table.
func (n *noisyResult) row(r *results) string {
	return fmt.Sprintf("| %s | %d | %s -> %s | %s | %s | %s | %.1f | %.1f | %.0f / %.0f / %.0f | %.0f | %s | %s |\n",
		time.Now().UTC().Format("2006-01-02 15:04"), r.machine.cpus, r.machine.load, r.machine.loadAfter,
		cellTimes(n.idle), cellTimes(n.build), cellTimes(n.teardown), n.heavyBuild.Seconds(), n.heavyTeardown.Seconds(),
		mb(n.rssBefore), mb(n.rssPeak), mb(n.rssAfter), n.yields, r.flags(), r.note)
}

// spreadHeading starts the table of noisy-neighbour runs of the other shapes.
const spreadHeading = "\n## Runs with a spread noisy neighbour\n"

const spreadHeader = spreadHeading + `
Appended by ` + "`make bench`" + ` and ` + "`--only-noisy`" + ` with ` + "`--noisy-shape namespaces`" + ` or ` + "`cluster`" + ` (cmd/bench,
noisyshape.go): the noisy-neighbour phase with the heavy tenant's 16,000 ConfigMaps spread
over 50 namespaces (one parent of 320 children in each, every namespace labelled
` + "`" + tenantLabel + "=heavy`" + `, the light tenant's ` + "`" + tenantLabel + "=light`" + `) or over 1,000
cluster-scoped parents of 16 children each. The columns are those of *Runs with a noisy
neighbour*.

| date (UTC) | CPUs | load | shape | light idle | light during build | light during teardown | heavy build | heavy teardown | RSS before / peak / after | yields | kubecel flags | note |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
`

// addTo adds the run's row to the table of its shape in doc.
func (n *noisyResult) addTo(doc string, r *results) error {
	if n.shape.name == defaultShape {
		return addRow(doc, noisyHeading, noisyHeader, n.row(r))
	}
	row := fmt.Sprintf("| %s | %d | %s -> %s | %s | %s | %s | %s | %.1f | %.1f | %.0f / %.0f / %.0f | %.0f | %s | %s |\n",
		time.Now().UTC().Format("2006-01-02 15:04"), r.machine.cpus, r.machine.load, r.machine.loadAfter, n.shape.label,
		cellTimes(n.idle), cellTimes(n.build), cellTimes(n.teardown), n.heavyBuild.Seconds(), n.heavyTeardown.Seconds(),
		mb(n.rssBefore), mb(n.rssPeak), mb(n.rssAfter), n.yields, r.flags(), r.note)
	return addRow(doc, spreadHeading, spreadHeader, row)
}
