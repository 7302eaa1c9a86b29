package faults

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// leakPerEdit is how many bytes the controller's live heap may grow per edit during
// TestLoad's steady edits: the slope of the live heap (see liveHeap) against the number
// of edits sent, a Theil–Sen estimate (the median of the slopes between every two
// samples), so that a sample taken while a burst of work is in flight (the informers'
// resync queues every widget) does not move it. Every widget has been edited once
// before (editAll), and the edits keep the same rate over the same widgets, so a
// controller that keeps nothing per edit has a flat live heap. An edit takes about one
// reconcile, so a leak of 1 KiB per reconcile is about 1 KiB per edit; leaks of 2 and
// 4 KiB per reconcile, planted, measured 2,514 and 4,004 bytes per edit, and the
// controller as it is about 100 (docs/reliability.md).
const leakPerEdit = 1024

// minSamples is how many samples the leak check wants: with fewer, one sample taken
// during a burst of work moves the estimates by more than a leak would.
const minSamples = 10

// rssGrowth is how much the resident set may grow from the first third of the samples to
// the last (means): a coarse bound for what the heap does not show (goroutine stacks,
// memory the runtime keeps), which also follows the heap goal and the runtime's lag in
// returning memory to the system.
const rssGrowth = 0.30

// checkNoLeak fails the test when the live heap grows with the edits (see leakPerEdit:
// by its Theil-Sen slope and between the means of its first and last third) or the
// resident set grows by more than rssGrowth, and logs the figures.
func checkNoLeak(t testing.TB, samples []sample, after sample) {
	t.Helper()
	slope := theilSen(samples, func(s sample) float64 { return s.liveHeap })
	edits := samples[len(samples)-1].edits - samples[0].edits
	first, last := samples[0], samples[len(samples)-1]
	rssFirst, rssLast := thirds(samples, func(s sample) float64 { return s.rss })
	goFirst, goLast := thirds(samples, func(s sample) float64 { return s.goroutines })
	goalFirst, goalLast := thirds(samples, func(s sample) float64 { return s.heapGoal })
	t.Logf("live heap over %d samples and %d edits: %s -> %s, slope %.0f bytes per edit (at most %d); means of the first and last third: heap goal %s -> %s (%+.1f%%), RSS %s -> %s (%+.1f%%), goroutines %.0f -> %.0f; after convergence: heap goal %s, RSS %s",
		len(samples), edits, mb(first.liveHeap), mb(last.liveHeap), slope, leakPerEdit,
		mb(goalFirst), mb(goalLast), 100*(goalLast/goalFirst-1),
		mb(rssFirst), mb(rssLast), 100*(rssLast/rssFirst-1), goFirst, goLast, mb(after.heapGoal), mb(after.rss))
	var series strings.Builder
	for _, s := range samples {
		fmt.Fprintf(&series, " %d:%.2f", s.edits, s.liveHeap/1e6)
	}
	t.Logf("live heap (MB) by edits sent:%s", series.String())
	// A leak raises both the slope and the last third's mean above the first's; noise
	// (a sample taken while the informers' resync is in flight) moves one of them.
	heapFirst, heapLast := thirds(samples, func(s sample) float64 { return s.liveHeap })
	editsFirst, editsLast := thirds(samples, func(s sample) float64 { return float64(s.edits) })
	growth := (heapLast - heapFirst) / max(editsLast-editsFirst, 1)
	t.Logf("live heap, means of the first and last third: %s -> %s, %.0f bytes per edit", mb(heapFirst), mb(heapLast), growth)
	switch {
	case len(samples) < minSamples:
		t.Errorf("%d samples of the live heap, want at least %d to tell a leak", len(samples), minSamples)
	case slope > leakPerEdit && growth > leakPerEdit:
		t.Errorf("the live heap grew by %.0f bytes per edit during steady edits (%s over %d edits; %.0f bytes per edit between the thirds' means), more than %d: the controller keeps memory per edit",
			slope, mb(slope*float64(edits)), edits, growth, leakPerEdit)
	}
	if rssLast > rssFirst*(1+rssGrowth) {
		t.Errorf("RSS grew from %s to %s during steady edits (more than %.0f%%)", mb(rssFirst), mb(rssLast), 100*rssGrowth)
	}
}

// theilSen is the median, over every two samples with different edit counts, of the
// slope of f against the edits sent.
func theilSen(samples []sample, f func(sample) float64) float64 {
	var slopes []float64
	for i := range samples {
		for j := i + 1; j < len(samples); j++ {
			if dx := samples[j].edits - samples[i].edits; dx != 0 {
				slopes = append(slopes, (f(samples[j])-f(samples[i]))/float64(dx))
			}
		}
	}
	if len(slopes) == 0 {
		return 0
	}
	slices.Sort(slopes)
	if n := len(slopes); n%2 == 0 {
		return (slopes[n/2-1] + slopes[n/2]) / 2
	}
	return slopes[len(slopes)/2]
}

// thirds returns the mean of f over the first and over the last third of the samples.
func thirds(samples []sample, f func(sample) float64) (first, last float64) {
	n := len(samples) / 3
	for i := range n {
		first += f(samples[i])
		last += f(samples[len(samples)-1-i])
	}
	return first / float64(n), last / float64(n)
}

// heapAllocLine is the line of runtime.MemStats in a heap profile in text form.
var heapAllocLine = regexp.MustCompile(`(?m)^# HeapAlloc = (\d+)$`)

// liveHeap asks the process (started with --pprof-addr) for its heap profile after a
// forced collection (`/debug/pprof/heap?gc=1`) and returns the bytes allocated then: the
// heap that survived the collection, plus what was allocated in the moment since.
func (c *controller) liveHeap() (float64, error) {
	code, body, err := c.fetch("pprof", "/debug/pprof/heap?gc=1&debug=1")
	if err == nil && code != 200 {
		err = fmt.Errorf("status %d", code)
	}
	if err != nil {
		return 0, fmt.Errorf("heap profile: %w", err)
	}
	m := heapAllocLine.FindStringSubmatch(body)
	if m == nil {
		return 0, fmt.Errorf("heap profile: no HeapAlloc line")
	}
	return strconv.ParseFloat(m[1], 64)
}
