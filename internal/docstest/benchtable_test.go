package docstest

import (
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the figures of the documents that the tests derive")

// cachedTableHead starts the table of docs/benchmarks.md that BenchmarkCachedObject
// measures.
const cachedTableHead = "| child | decoded (before) | cached (now) | decode per read |\n|---|---|---|---|\n"

// benchLine is a line of BenchmarkCachedObject's output.
var benchLine = regexp.MustCompile(`^BenchmarkCachedObject/(\w+)-\d+\s+\d+\s+([0-9.]+) ns/op\s+([0-9.]+) cached-B/obj\s+([0-9.]+) decoded-B/obj`)

// TestCachedObjectTable runs BenchmarkCachedObject (engine/internal/informers) and
// fails when the bytes per object of docs/benchmarks.md's table of cached objects are
// more than 2% off what it measures; -update rewrites the table from the run, the
// decode time included (a time, which is not compared).
func TestCachedObjectTable(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", "^BenchmarkCachedObject$", "-benchtime", "200x", "./engine/internal/informers")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test -bench BenchmarkCachedObject: %v\n%s", err, out)
	}
	type measure struct{ decodeNs, cached, decoded float64 }
	measured := map[string]measure{}
	var kinds []string
	for _, l := range strings.Split(string(out), "\n") {
		m := benchLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var v [3]float64
		for i := range v {
			v[i], _ = strconv.ParseFloat(m[i+2], 64)
		}
		measured[m[1]] = measure{v[0], v[1], v[2]}
		kinds = append(kinds, m[1])
	}
	if len(kinds) == 0 {
		t.Fatalf("no result in the benchmark's output:\n%s", out)
	}

	path := filepath.Join(root, "docs/benchmarks.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	start := strings.Index(doc, cachedTableHead)
	if start < 0 {
		t.Fatalf("docs/benchmarks.md has no table starting %q", cachedTableHead)
	}
	end := start + len(cachedTableHead)
	for end < len(doc) && doc[end] == '|' {
		end += strings.IndexByte(doc[end:], '\n') + 1
	}
	if *update {
		var b strings.Builder
		b.WriteString(cachedTableHead)
		for _, k := range kinds {
			m := measured[k]
			fmt.Fprintf(&b, "| %s | %s B | %s B | %.0f µs |\n", kindName(k), thousands(m.decoded), thousands(m.cached), m.decodeNs/1000)
		}
		if err := os.WriteFile(path, []byte(doc[:start]+b.String()+doc[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	rows := strings.Split(strings.TrimSuffix(doc[start+len(cachedTableHead):end], "\n"), "\n")
	if len(rows) != len(kinds) {
		t.Errorf("docs/benchmarks.md: the table of cached objects has %d rows, the benchmark measures %d kinds (%v)", len(rows), len(kinds), kinds)
	}
	for _, row := range rows {
		cells := strings.Split(strings.Trim(row, "| "), " | ")
		k := strings.ToLower(cells[0])
		m, ok := measured[k]
		if !ok || len(cells) != 4 {
			t.Errorf("docs/benchmarks.md: row %q: the benchmark measures no %s", row, k)
			continue
		}
		for i, want := range map[int]float64{1: m.decoded, 2: m.cached} {
			got, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSuffix(cells[i], " B"), ",", ""), 64)
			if err != nil || math.Abs(got-want) > want*0.02 {
				t.Errorf("docs/benchmarks.md: %s: %q bytes per object, BenchmarkCachedObject measures %.0f (go test ./internal/docstest -run TestCachedObjectTable -update rewrites the table)", cells[0], cells[i], want)
			}
		}
	}
}

// kindName is the kind a sub-benchmark measures: configmap -> ConfigMap.
func kindName(sub string) string {
	for _, k := range []string{"ConfigMap", "Deployment", "Service", "Secret", "Pod"} {
		if strings.EqualFold(k, sub) {
			return k
		}
	}
	return sub
}

// thousands writes a number of bytes rounded, with a comma between thousands.
func thousands(f float64) string {
	s := strconv.FormatInt(int64(math.Round(f)), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
