package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// metricValues are the sums of metrics' samples by name (controller.metricValues).
type metricValues map[string]float64

func (m metricValues) minus(earlier metricValues) metricValues {
	out := metricValues{}
	for k, v := range m {
		out[k] = v - earlier[k]
	}
	return out
}

// workNames are the metrics of a replica's reconciles and work queue that say where its
// convergence time went: how many reconciles, how long each took (work), and how long
// parents waited in the queue for a worker.
var workNames = []string{
	"kubecel_reconcile_total",
	"workqueue_work_duration_seconds_sum", "workqueue_work_duration_seconds_count",
	"workqueue_queue_duration_seconds_sum", "workqueue_queue_duration_seconds_count",
}

// shardMetrics are read from each sharded replica at the settled point.
var shardMetrics = []string{
	"kubecel_shard_members", "kubecel_shard_buckets", "kubecel_shard_owned_parents",
	"kubecel_shard_handovers_total",
	"kubecel_shard_handover_duration_seconds_sum", "kubecel_shard_handover_duration_seconds_count",
}

// workStats reads workNames from every replica; a replica that does not answer gets
// none (logged), so its work columns read 0 rather than failing the run.
func (f fleet) workStats(ctx context.Context) []metricValues {
	out := make([]metricValues, len(f))
	for i, c := range f {
		v, err := c.metricValues(ctx, workNames...)
		if err != nil {
			logf("%s: work metrics: %v", c.name, err)
		}
		out[i] = v
	}
	return out
}

// identify finds which replica sent the writes of each controller user agent in the
// audit log. One replica owns every agent seen. Sharded replicas write as
// kubecel/<identity>, and each one's log names its own identity in its first line with an
// identity key (`identity="host_1a2b3c4d"`; later lines also list the other members). An
// agent that no replica claims stays unassigned, and its writes are listed by agent.
func (f fleet) identify(res *results) {
	var agents []string
	for a := range res.agentWrites {
		agents = append(agents, a)
	}
	for a := range res.steadyAgents {
		if _, ok := res.agentWrites[a]; !ok {
			agents = append(agents, a)
		}
	}
	if len(f) == 1 && len(agents) == 1 {
		res.replicas[0].agent = agents[0]
		return
	}
	for i, c := range f {
		data, err := os.ReadFile(c.log.Name())
		if err != nil {
			logf("%s: read log: %v", c.name, err)
			continue
		}
		if m := identityKey.FindSubmatch(data); m != nil {
			res.replicas[i].agent = "kubecel/" + string(m[1])
		}
	}
}

// identityKey is the structured log key that names a sharded replica's identity.
var identityKey = regexp.MustCompile(`\bidentity="([^"]+)"`)

// unassigned are the writes (convergence, steady state) of agents identify could not
// tie to a replica.
func (r *results) unassigned() map[string][2]int {
	known := map[string]bool{}
	for _, rr := range r.replicas {
		known[rr.agent] = rr.agent != ""
	}
	out := map[string][2]int{}
	for a, n := range r.agentWrites {
		if !known[a] {
			c := out[a]
			c[0] = n
			out[a] = c
		}
	}
	for a, n := range r.steadyAgents {
		if !known[a] {
			c := out[a]
			c[1] = n
			out[a] = c
		}
	}
	return out
}

// printReplicas prints what each replica did (one row for a single process).
func (r *results) printReplicas(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\nper replica: writes (audit log, by user agent), reconciles and work queue during convergence; buckets, parents, handovers at the settled point\n")
	fmt.Fprintf(tw, "replica\tbuckets at start / settled\tparents\thandovers\twrites conv.\twrites steady\treconciles\tms per reconcile\treconciles in flight\tms in queue\tCPU conv. / total s\tRSS peak / conv. / settled (anon) MB\tuser agent\t\n")
	for _, rr := range r.replicas {
		fmt.Fprintf(tw, "%s\t%d / %.0f\t%.0f\t%.0f\t%s\t%s\t%.0f\t%.1f\t%.2f\t%.1f\t%.1f / %.1f\t%.0f / %.0f / %.0f (%.0f)\t%s\t\n",
			rr.name, rr.bucketsAtStart, rr.shard["kubecel_shard_buckets"], rr.shard["kubecel_shard_owned_parents"], rr.shard["kubecel_shard_handovers_total"],
			agentCount(r.agentWrites, rr.agent), agentCount(r.steadyAgents, rr.agent), rr.work["kubecel_reconcile_total"],
			1000*perItem(rr.work, "workqueue_work_duration_seconds"), rr.work["workqueue_work_duration_seconds_sum"]/r.converge.Seconds(),
			1000*perItem(rr.work, "workqueue_queue_duration_seconds"), rr.cpuConverge, rr.cpuTotal,
			mb(rr.peak), mb(rr.converged), mb(rr.settled), mb(rr.settledAnon), orNone(rr.agent))
	}
	tw.Flush()
	for a, n := range r.unassigned() {
		fmt.Fprintf(w, "writes of user agent %q not tied to a replica: %d during convergence, %d at steady state\n", a, n[0], n[1])
	}
	if len(r.replicas) > 1 && r.speedup > 0 {
		fmt.Fprintf(w, "convergence speedup over the 1-replica row of %s (%.1f s): %.2fx\n", r.speedupRef, r.oneReplica.Seconds(), r.speedup)
	}
}

func agentCount(w writeCounts, agent string) string {
	if agent == "" {
		return "?"
	}
	return strconv.Itoa(w[agent])
}

// perItem is a histogram's mean: sum over count.
func perItem(m metricValues, histogram string) float64 {
	n := m[histogram+"_count"]
	if n == 0 {
		return 0
	}
	return m[histogram+"_sum"] / n
}

func orNone(s string) string {
	if s == "" {
		return "(not identified)"
	}
	return s
}

// shardedHeading starts the table of sharded runs.
const shardedHeading = "\n## Runs with sharding\n"

const shardedHeader = shardedHeading + `
Appended by ` + "`make bench BENCH_FLAGS='--replicas N ...'`" + ` (cmd/bench; see *Sharding*). Times in
seconds. Every replica is ` + "`kubecel run --sharding`" + ` with lease 6 s, renew 4 s, retry 1 s. "x 1
replica" is the convergence of the latest 1-replica row with the same N and flags over
this row's. Writes are the controller's write requests in the bench namespace (audit
log), per replica by user agent during convergence. Parents per replica is
` + "`kubecel_shard_owned_parents`" + ` at the settled point. RSS in MB (10^6 bytes), each replica's
own process, peak / settled. CPU is the replicas' user+system seconds together. "Machine
CPU" is the whole machine's during convergence: busy share of all CPUs, then CPU seconds
of kubecel (all replicas) / kube-apiserver / etcd / the rest (kube-controller-manager,
the bench, other processes). Load is the 1/5/15-minute load average before -> after the run.

| date (UTC) | N | replicas | CPUs | load | limit | convergence (x limit) | x 1 replica | writes/parent | steady writes | update | deletion (x limit) | writes per replica | parents per replica | RSS peak / settled per replica | CPU conv. / total | machine CPU in conv. | kubecel flags | note |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
`

// shardedRow is the run's row of the table of sharded runs.
func (r *results) shardedRow() string {
	var writes, parents, rss []string
	for _, rr := range r.replicas {
		writes = append(writes, agentCount(r.agentWrites, rr.agent))
		parents = append(parents, fmt.Sprintf("%.0f", rr.shard["kubecel_shard_owned_parents"]))
		rss = append(rss, fmt.Sprintf("%.0f / %.0f", mb(rr.peak), mb(rr.settled)))
	}
	for a, n := range r.unassigned() {
		writes = append(writes, fmt.Sprintf("%s: %d", a, n[0]))
	}
	vsOne := "reference"
	if len(r.replicas) > 1 {
		vsOne = "no 1-replica row"
		if r.speedup > 0 {
			vsOne = fmt.Sprintf("%.2fx (%s)", r.speedup, r.speedupRef)
		}
	}
	deletion := "skipped"
	if r.deletion > 0 {
		deletion = fmt.Sprintf("%.1f (%s)", r.deletion.Seconds(), times(r.deleteRatio()))
	}
	return fmt.Sprintf("| %s | %d | %d | %d | %s -> %s | %s | %.1f (%s) | %s | %.2f | %d | %.1f | %s | %s | %s | %s | %.1f / %.1f | %s | %s | %s |\n",
		time.Now().UTC().Format("2006-01-02 15:04"), r.n, len(r.replicas), r.machine.cpus, r.machine.load, r.machine.loadAfter,
		cell(r.limit), r.converge.Seconds(), times(r.limitRatio()), vsOne, r.writesPerParent(), r.steadyWrites.total(),
		r.update.Seconds(), deletion, strings.Join(writes, " / "), strings.Join(parents, " / "), strings.Join(rss, ", "),
		r.cpuConverge(), r.cpuTotal(), r.convergeCPU.cell(), r.flags(), r.note)
}

// compareWithOneReplica finds, in the sharded table of doc, the latest 1-replica row with
// this run's N and flags, and sets the speedup of this run's convergence over it.
func (r *results) compareWithOneReplica(doc string) {
	rows := tableRows(doc, shardedHeading)
	for _, row := range slices.Backward(rows) {
		if len(row) < 18 || row[1] != strconv.Itoa(r.n) || row[2] != "1" || row[17] != r.flags() {
			continue
		}
		conv, err := strconv.ParseFloat(strings.TrimSpace(strings.Split(row[6], "(")[0]), 64)
		if err != nil || conv <= 0 {
			continue
		}
		r.oneReplica = time.Duration(conv * float64(time.Second))
		r.speedup = conv / r.converge.Seconds()
		r.speedupRef = row[0]
		return
	}
}
