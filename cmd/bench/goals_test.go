package main

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the goals table of docs/benchmarks.md from its rows")

const benchmarksDoc = "../../docs/benchmarks.md"

// TestGoalsTable fails when the goals table of docs/benchmarks.md is not what its rows
// give (goalsTable); -update rewrites it.
func TestGoalsTable(t *testing.T) {
	data, err := os.ReadFile(benchmarksDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	want, err := goalsTable(doc)
	if err != nil {
		t.Fatal(err)
	}
	got, start, end, err := goalsIn(doc)
	if err != nil {
		t.Fatal(err)
	}
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(benchmarksDoc, []byte(doc[:start]+want+doc[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/benchmarks.md: the goals table is not what the rows give (go test ./cmd/bench -run TestGoalsTable -update rewrites it); -document +rows:\n%s", cmp.Diff(got, want))
}

// TestGoalsFromRows checks the goals of a small document: the latest paired row of each
// size (a "before:" row of an older binary left out), and the verdicts.
func TestGoalsFromRows(t *testing.T) {
	single := docHeader +
		"| 2026-11-25 01:00 | 1000 | 2 | 23.5 | go | l | 5.0 | 7.0 | 9.0 (1.29x / 1.80x) | 4.00 | 0 | 9.0 | 3.0 | 5.0 (1.67x) | 90 / 80 (30) | 2.0 / 8.0 | defaults | 2 pairs, alternating which goes first: convergence x limit 1.29x 1.31x, median 1.30x; deletion x limit 1.67x 1.40x, median 1.54x |\n" +
		"| 2026-11-25 02:00 | 1000 | 2 | 23.5 | go | l | 5.0 | 7.0 | 7.0 (1.00x / 1.40x) | 4.00 | 0 | 9.0 | 3.0 | 3.0 (1.00x) | 90 / 80 (30) | 2.0 / 8.0 | defaults | 2 pairs, alternating which goes first: convergence x limit 1.00x 1.10x, median 1.05x; deletion x limit 1.00x 1.20x, median 1.10x; controller CPU x clients' CPU 0.90x 1.10x, median 1.00x; bench wall time 400.0 s |\n" +
		"| 2026-11-25 02:10 | 1000 | 2 | 23.5 | go | l | 5.0 | 7.0 | 9.0 (1.29x / 1.80x) | 4.00 | 0 | 9.0 | 3.0 | 5.0 (1.67x) | 90 / 80 (30) | 2.0 / 8.0 | defaults | before: an older binary; 2 pairs, alternating which goes first: convergence x limit 1.29x 1.31x, median 1.30x; deletion x limit 1.67x 1.40x, median 1.54x; controller CPU x clients' CPU 1.40x 1.60x, median 1.50x; bench wall time 300.0 s |\n" +
		"| 2026-11-25 02:30 | 1000 | 2 | 23.5 | go | l | 5.0 | 7.0 | 20.0 (2.86x / 4.00x) | 4.00 | 0 | 9.0 | 3.0 | 3.0 (1.00x) | 90 / 80 (30) | 2.0 / 8.0 | --workers=1 | 2 pairs, alternating which goes first: convergence x limit 2.86x 2.80x, median 2.83x; deletion x limit 1.00x 1.00x, median 1.00x |\n" +
		"| 2026-11-25 03:00 | 10000 | 2 | 23.5 | go | l | 50.0 | 70.0 | 70.0 (1.00x / 1.40x) | 4.00 | 0 | 90.0 | 30.0 | 30.0 (1.00x) | 200 / 160 (100) | 20.0 / 80.0 | defaults | 2 pairs, alternating which goes first: convergence x limit 1.00x 1.00x, median 1.00x; deletion x limit 1.00x 1.00x, median 1.00x |\n" +
		"| 2026-11-25 04:00 | 1000 | 2 | 23.5 | go | l | 5.0 | 7.0 | 7.0 (1.00x / 1.40x) | 4.00 | 0 | 9.0 | 3.0 | 3.0 (1.00x) | 80 / 70 (30) | 2.0 / 8.0 | defaults | refs: each parent reads one ConfigMap |\n" +
		"| 2026-11-25 05:00 | 10000 | 2 | 23.5 | go | l | 50.0 | 70.0 | 70.0 (1.00x / 1.40x) | 4.00 | 0 | 90.0 | skipped | skipped | 200 / 140 (90) | 20.0 / 80.0 | defaults | refs: each parent reads one ConfigMap |\n"
	sharded := shardedHeader +
		"| 2026-11-25 06:00 | 1000 | 4 | 2 | l | 7.0 | 10.0 (1.43x) | 1.20x (2026-11-25 05:50) | 4.00 | 0 | 9.0 | 6.0 (1.50x) | 1000 / 1000 / 1000 / 1000 | 250 / 250 / 250 / 250 | 80 / 70, 80 / 70, 80 / 70, 80 / 70 | 5.0 / 15.0 | 90%: 1 / 2 / 3 / 4 | --workers=1 |  |\n" +
		"| 2026-11-25 06:10 | 1000 | 4 | 2 | l | 7.0 | 10.0 (1.43x) | 3.50x (2026-11-25 06:05) | 4.00 | 0 | 9.0 | 6.0 (1.50x) | 1000 / 1000 / 1000 / 1000 | 250 / 250 / 250 / 250 | 80 / 70, 80 / 70, 80 / 70, 80 / 70 | 5.0 / 15.0 | 60%: 1 / 2 / 3 / 4 | --qps=50 |  |\n"
	noisy := noisyHeader +
		"| 2026-11-25 07:00 | 2 | l | 0.02 / 0.04 (40) | 0.10 / 0.50 (30) | 0.30 / 0.60 (30) | 16.0 | 15.0 | 70 / 200 / 90 | 600 | defaults | fair (pair 1) |\n" +
		"| 2026-11-25 07:01 | 2 | l | 0.02 / 0.04 (40) | 0.10 / 15.00 (6) | 0.30 / 13.00 (4) | 16.0 | 14.0 | 70 / 270 / 90 | 0 | defaults | before: FIFO (pair 1) |\n"
	doc := "# B\n" + goalsHeading + "\n| goal | measured | met? |\n|---|---|---|\n| old | old | old |\n\ntext\n" + single + sharded + noisy
	table, err := goalsTable(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"| convergence within 1.15x the same-writes limit | N=1,000: median **1.05x** over 2 pairs (1.00x 1.10x; row 2026-11-25 02:00); N=10,000: median **1.00x** over 2 pairs (1.00x 1.00x; row 2026-11-25 03:00) | **met** |",
		"| deletion of every child within 1.5x the direct-delete limit | N=1,000: median **1.10x** over 2 pairs (1.00x 1.20x; row 2026-11-25 02:00); N=10,000: median **1.00x** over 2 pairs (1.00x 1.00x; row 2026-11-25 03:00) | **met** |",
		"| with refs (`--refs`, each parent reads one ConfigMap): 4 writes per parent, 0 at rest, settled RSS under 150 MB at N=10,000 | N=1,000: 4.00 writes per parent, 0 at rest (row 2026-11-25 04:00); N=10,000: 4.00 writes per parent, 0 at rest, settled RSS **140 MB** (90 MB anonymous) (row 2026-11-25 05:00) | **met** |",
		"| controller CPU for the same writes at most 1.0x what the bench's 16 clients spend on them | N=1,000: median **1.00x** over 2 pairs (0.90x 1.10x; row 2026-11-25 02:00) | **met** |",
		"| settled RSS under 150 MB at N=10,000 | **160 MB** (100 MB anonymous), peak 200 MB (row 2026-11-25 03:00) | **not met** |",
		"| `make bench` under 15 minutes at N=1,000 | **6 m 40 s** (row 2026-11-25 02:00) | **met** |",
		"| noisy neighbour: the heavy tenant no more than 10% slower than before fair queuing | build and teardown at most **+7%** against the run before in each pair (rows 2026-11-25 07:00) | **met** |",
		"| at least 3x convergence from 1 to 4 sharded replicas (`--replicas`, see *Sharding*) | from one replica to four, by flags per replica: `--workers=1` 1.20x (row 2026-11-25 06:00); `--qps=50` 3.50x (row 2026-11-25 06:10) | **not met** with `--workers=1`; met with `--qps=50` |",
	}
	for _, w := range want {
		if !strings.Contains(table, w+"\n") {
			t.Errorf("the goals table lacks\n%s\nin\n%s", w, table)
		}
	}
	got, start, end, err := goalsIn(doc)
	if err != nil || got != "| goal | measured | met? |\n|---|---|---|\n| old | old | old |\n" || doc[end:end+6] != "\ntext\n" || doc[start-1] != '\n' {
		t.Errorf("goalsIn = %q, %d, %d, %v", got, start, end, err)
	}
}

func TestCPURatios(t *testing.T) {
	for _, tc := range []struct {
		note   string
		ratios []string
		median float64
		ok     bool
	}{
		{"3 pairs, alternating which goes first: convergence x limit 1.00x 1.00x, median 1.00x; controller CPU x clients' CPU 0.95x 1.01x 0.87x, median 0.95x",
			[]string{"0.95x", "1.01x", "0.87x"}, 0.95, true},
		{"controller CPU x clients' CPU 0.90x skipped, median 0.90x", []string{"0.90x", "skipped"}, 0.90, true},
		{"3 pairs, alternating which goes first: convergence x limit 1.00x 1.00x, median 1.00x", nil, 0, false},
	} {
		ratios, median, ok := cpuRatios(tc.note)
		if ok != tc.ok || median != tc.median || !slices.Equal(ratios, tc.ratios) {
			t.Errorf("cpuRatios(%q) = %v, %v, %v; want %v, %v, %v", tc.note, ratios, median, ok, tc.ratios, tc.median, tc.ok)
		}
	}
}
