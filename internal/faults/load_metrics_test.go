package faults

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The controller's metrics as TestLoad reads them.

// sample is one reading of the controller's metrics.
type sample struct {
	at         time.Duration // since the edits began
	edits      int64         // edits sent by then
	liveHeap   float64       // HeapAlloc right after a forced collection (see liveHeap)
	depth      float64       // workqueue_depth
	retries    float64       // workqueue_retries_total
	reconciles float64       // kubecel_reconcile_total, all results
	errors     float64       // kubecel_reconcile_total{result="error"}
	celErrors  float64       // kubecel_cel_evaluation_errors_total
	heapGoal   float64       // go_memstats_next_gc_bytes
	rss        float64       // process_resident_memory_bytes
	goroutines float64       // go_goroutines
}

// scrape reads the controller's metrics or fails the test.
func scrape(t testing.TB, ctrl *controller) sample {
	t.Helper()
	s, err := ctrl.scrape()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// scrape reads the controller's /metrics.
func (c *controller) scrape() (sample, error) {
	code, body, err := c.fetch("metrics", "/metrics")
	if err == nil && code != 200 {
		err = fmt.Errorf("status %d", code)
	}
	if err != nil {
		return sample{}, fmt.Errorf("scrape metrics: %w", err)
	}
	m := parseMetrics(body)
	return sample{
		depth:      m.sum("workqueue_depth"),
		retries:    m.sum("workqueue_retries_total"),
		reconciles: m.sum("kubecel_reconcile_total"),
		errors:     m.sum("kubecel_reconcile_total", `result="error"`),
		celErrors:  m.sum("kubecel_cel_evaluation_errors_total"),
		heapGoal:   m.sum("go_memstats_next_gc_bytes"),
		rss:        m.sum("process_resident_memory_bytes"),
		goroutines: m.sum("go_goroutines"),
	}, nil
}

// series is one line of the Prometheus text format.
type series struct {
	name, labels string
	value        float64
}

type metricsText []series

// parseMetrics reads the Prometheus text format: `name{labels} value` lines and comments.
func parseMetrics(text string) metricsText {
	var out metricsText
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cut := strings.LastIndexByte(line, ' ')
		if cut < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[cut+1:], 64)
		if err != nil {
			continue
		}
		s := series{name: line[:cut], value: v}
		if open := strings.IndexByte(s.name, '{'); open >= 0 {
			s.name, s.labels = s.name[:open], s.name[open:]
		}
		out = append(out, s)
	}
	return out
}

// sum adds the series named name whose labels include every one of labels (`k="v"`).
func (m metricsText) sum(name string, labels ...string) float64 {
	total := 0.0
	for _, s := range m {
		if s.name != name {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(s.labels, l)
		}
		if match {
			total += s.value
		}
	}
	return total
}

// mb formats bytes as megabytes.
func mb(bytes float64) string { return fmt.Sprintf("%.1f MB", bytes/1e6) }
