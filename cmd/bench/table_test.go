package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const testDoc = `# Benchmarks

## Runs against the same-writes limit

| date | N |
|---|---|
| a | 1 |

## Runs with sharding

| date (UTC) | N |
|---|---|
| b | 2 |
`

func TestInsertRow(t *testing.T) {
	tests := []struct {
		name, doc, heading, header, row, want string
	}{
		{"first table, another follows", testDoc, runsHeading, "unused", "| c | 3 |\n",
			"# Benchmarks\n\n## Runs against the same-writes limit\n\n| date | N |\n|---|---|\n| a | 1 |\n| c | 3 |\n\n## Runs with sharding\n\n| date (UTC) | N |\n|---|---|\n| b | 2 |\n"},
		{"last table", testDoc, shardedHeading, "unused", "| c | 3 |\n", testDoc + "| c | 3 |\n"},
		{"no such table", "# Benchmarks\n", "\n## New\n", "\n## New\n\n| x |\n|---|\n", "| 1 |\n",
			"# Benchmarks\n\n## New\n\n| x |\n|---|\n| 1 |\n"},
		{"file without final newline", "# B\n\n## New\n\n| x |\n|---|", "\n## New\n", "unused", "| 1 |\n",
			"# B\n\n## New\n\n| x |\n|---|\n| 1 |\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := insertRow(tt.doc, tt.heading, tt.header, tt.row)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := insertRow("\n## New\n\ntext\n", "\n## New\n", "", "| 1 |\n"); err == nil {
		t.Error("a heading without a table: no error")
	}
}

func TestCompareWithOneReplica(t *testing.T) {
	doc := "# B\n" + shardedHeader +
		"| 2026-11-25 01:00 | 1000 | 1 | 2 | 1 1 1 -> 1 1 1 | 10.0 | 40.0 (4.00x) | reference | 4.00 | 0 | 9.0 | skipped | 4000 | 1000 | 90 / 80 | 5.0 / 9.0 | 90%: 1 / 2 / 3 / 4 | --workers=2 |  |\n" +
		"| 2026-11-25 01:05 | 1000 | 1 | 2 | 1 1 1 -> 1 1 1 | 10.0 | 30.0 (3.00x) | reference | 4.00 | 0 | 9.0 | skipped | 4000 | 1000 | 90 / 80 | 5.0 / 9.0 | 90%: 1 / 2 / 3 / 4 | --workers=2 |  |\n" +
		"| 2026-11-25 01:10 | 1000 | 1 | 2 | 1 1 1 -> 1 1 1 | 10.0 | 20.0 (2.00x) | reference | 4.00 | 0 | 9.0 | skipped | 4000 | 1000 | 90 / 80 | 5.0 / 9.0 | 90%: 1 / 2 / 3 / 4 | --workers=4 |  |\n" +
		"| 2026-11-25 01:15 | 1000 | 2 | 2 | 1 1 1 -> 1 1 1 | 10.0 | 15.0 (1.50x) | 2.00x | 4.00 | 0 | 9.0 | skipped | 2000 / 2000 | 500 / 500 | 90 / 80, 90 / 80 | 5.0 / 9.0 | 90%: 1 / 2 / 3 / 4 | --workers=2 |  |\n"
	r := &results{n: 1000, kubecelArgs: "--workers=2", converge: 10 * time.Second}
	r.compareWithOneReplica(doc)
	if r.speedupRef != "2026-11-25 01:05" || r.speedup != 3 || r.oneReplica != 30*time.Second {
		t.Errorf("compared with %q (%s): %.2fx, want the 01:05 row (30 s): 3.00x", r.speedupRef, r.oneReplica, r.speedup)
	}
	r = &results{n: 10000, kubecelArgs: "--workers=2", converge: 10 * time.Second}
	if r.compareWithOneReplica(doc); r.speedup != 0 {
		t.Errorf("N=10000 compared with the row of %s", r.speedupRef)
	}
}

func TestRunArgs(t *testing.T) {
	c := config{sharding: true, shardingArgs: defaultShardingArgs, workers: 2, kubecelArgs: "--qps=500 --workers=3"}
	want := []string{"--rules", "r.yaml", "--kubeconfig", "k", "--sharding", "--sharding-namespace=kubecel-system",
		"--sharding-lease-duration=6s", "--sharding-renew-deadline=4s", "--sharding-retry-period=1s",
		"--workers=2", "--qps=500", "--workers=3"}
	if diff := cmp.Diff(want, c.runArgs("r.yaml", "k")); diff != "" {
		t.Errorf("runArgs (-want +got):\n%s", diff)
	}
	if got, want := c.flagsColumn(), "--workers=2 --qps=500 --workers=3"; got != want {
		t.Errorf("flagsColumn = %q, want %q", got, want)
	}
	one := config{kubecelEnv: "GOGC=50", shardingArgs: defaultShardingArgs}
	if diff := cmp.Diff([]string{"--rules", "r.yaml", "--kubeconfig", "k"}, one.runArgs("r.yaml", "k")); diff != "" {
		t.Errorf("unsharded runArgs (-want +got):\n%s", diff)
	}
	if got := one.flagsColumn(); got != "GOGC=50" {
		t.Errorf("unsharded flagsColumn = %q, want GOGC=50", got)
	}
}

// A row the bench writes has the header's columns, and a later run finds it as its
// 1-replica reference.
func TestShardedRowRoundTrip(t *testing.T) {
	one := &results{n: 1000, kubecelArgs: "--workers=2", sharding: true, converge: 24 * time.Second,
		replicas:    []replicaResult{{name: "replica-1", agent: "kubecel/h_1", shard: metricValues{"kubecel_shard_owned_parents": 1000}}},
		agentWrites: writeCounts{"kubecel/h_1": 4000, "kubecel/other": 3}}
	doc, err := insertRow("# B\n", shardedHeading, shardedHeader, one.shardedRow())
	if err != nil {
		t.Fatal(err)
	}
	rows := tableRows(doc, shardedHeading)
	if len(rows) != 1 {
		t.Fatalf("rows %q", rows)
	}
	if got, want := len(rows[0]), 19; got != want {
		t.Errorf("row has %d cells, want %d: %q", got, want, rows[0])
	}
	if got, want := rows[0][12], "4000 / kubecel/other: 3"; got != want {
		t.Errorf("writes per replica %q, want %q", got, want)
	}
	four := &results{n: 1000, kubecelArgs: "--workers=2", sharding: true, converge: 8 * time.Second}
	if four.compareWithOneReplica(doc); four.speedup != 3 {
		t.Errorf("speedup %.2f, want 3", four.speedup)
	}
}
