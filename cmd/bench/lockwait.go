package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The controller's metrics that the --crds phase reads, parsed in full rather than
// summed by name (controller.metricValues), so that a metric the binary does not have
// (an older kubecel, run for "before" figures) reads as absent, not as 0.

// lockWaitMetric is the time a worker waited on the controller's own locks before a
// reconcile (issue 42).
const lockWaitMetric = "kubecel_reconcile_lock_wait_seconds"

// scrape reads the given metrics from the controller's /metrics once. It asks for them
// alone (name[], which client_golang's handler serves since v1.21; an older one sends
// every metric): at K=1,000 rules the whole page is megabytes, which the controller
// would spend CPU on at every read.
func (c *controller) scrape(ctx context.Context, names ...string) (scraped, error) {
	q := url.Values{"name[]": names}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.metrics+"/metrics?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: GET /metrics: %s", c.name, resp.Status)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	return parseScrape(raw)
}

// scraped is one reading of /metrics, by family name.
type scraped map[string]*dto.MetricFamily

func parseScrape(raw []byte) (scraped, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	return scraped(families), err
}

// value is the sum of a counter's or gauge's samples over their label sets; ok is false
// when the binary has no such metric.
func (s scraped) value(name string) (float64, bool) {
	fam, ok := s[name]
	if !ok {
		return 0, false
	}
	sum := 0.0
	for _, m := range fam.GetMetric() {
		sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
	}
	return sum, true
}

// histogram is one reading of a histogram, summed over its label sets: each bucket's
// upper bound and cumulative count, the +Inf bucket (the sample count) last. A nil
// histogram is one the binary does not have.
type histogram struct {
	bounds []float64
	counts []uint64
}

// histogram returns the named histogram, or nil when the binary has none by that name.
func (s scraped) histogram(name string) *histogram {
	fam, ok := s[name]
	if !ok || fam.GetType() != dto.MetricType_HISTOGRAM {
		return nil
	}
	h := &histogram{}
	for i, m := range fam.GetMetric() {
		buckets := m.GetHistogram().GetBucket()
		if i == 0 {
			for _, b := range buckets {
				h.bounds = append(h.bounds, b.GetUpperBound())
			}
			h.bounds = append(h.bounds, math.Inf(1))
			h.counts = make([]uint64, len(h.bounds))
		}
		for j, b := range buckets {
			if j < len(h.counts)-1 {
				h.counts[j] += b.GetCumulativeCount()
			}
		}
		h.counts[len(h.counts)-1] += m.GetHistogram().GetSampleCount()
	}
	return h
}

// longest is the index of the highest bucket that gained samples since before (nil: an
// empty histogram), -1 when none did.
func (h *histogram) longest(before *histogram) int {
	prev := func(i int) uint64 {
		if i < 0 {
			return 0
		}
		if before == nil || i >= len(before.counts) {
			return 0
		}
		return before.counts[i]
	}
	for i := len(h.counts) - 1; i >= 0; i-- {
		own := h.counts[i]
		if i > 0 {
			own -= h.counts[i-1]
		}
		if own > prev(i)-prev(i-1) {
			return i
		}
	}
	return -1
}

// longestWait is the cell for the longest lock wait between two readings: the bound
// of the highest bucket that gained samples ("<= 2 ms", "> 10 s" for the +Inf bucket),
// "none" when no reconcile started between them, "n/a" when the binary does not have
// the histogram.
func longestWait(before, after *histogram) string {
	if after == nil {
		return "n/a"
	}
	i := after.longest(before)
	switch {
	case i < 0:
		return "none"
	case math.IsInf(after.bounds[i], 1):
		if i == 0 {
			return "> 0 s"
		}
		return "> " + seconds(after.bounds[i-1])
	default:
		return "<= " + seconds(after.bounds[i])
	}
}

// seconds prints a bucket bound: "0.1 ms", "2 ms", "1 s".
func seconds(s float64) string {
	if s < 1 {
		return strconv.FormatFloat(s*1000, 'f', -1, 64) + " ms"
	}
	return strconv.FormatFloat(s, 'f', -1, 64) + " s"
}

// waitBound reads a longestWait cell back as its bound in seconds; ok is false for
// "n/a", "none" and a cell of another form. "> X" reads as +Inf.
func waitBound(cell string) (float64, bool) {
	var v float64
	var unit string
	switch {
	case len(cell) > 2 && cell[:2] == "> ":
		return math.Inf(1), true
	case len(cell) > 3 && cell[:3] == "<= ":
		if _, err := fmt.Sscanf(cell[3:], "%g %s", &v, &unit); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	switch unit {
	case "ms":
		return v / 1000, true
	case "s":
		return v, true
	}
	return 0, false
}
