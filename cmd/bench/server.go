package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// This file accounts for the API server's work during a phase, from its own /metrics:
// the requests it served by verb and resource (reads too, which the audit log of writes
// does not show) and the watch events it sent. The machine's CPU says how much more the
// server worked during convergence than during the same-writes limit; these counts say
// on what.

// serverCounts is a snapshot of counters, by a short label: "PATCH configmaps",
// "WATCH webapps", "events ConfigMap".
type serverCounts map[string]float64

// serverSample reads kube-apiserver's metrics. A failure gives an empty snapshot: the
// accounting is a diagnosis, not a result.
func (b *bench) serverSample(ctx context.Context) serverCounts {
	raw, err := b.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		logf("kube-apiserver metrics: %v", err)
		return serverCounts{}
	}
	counts, err := parseServerCounts(raw)
	if err != nil {
		logf("kube-apiserver metrics: %v", err)
	}
	return counts
}

// parseServerCounts sums apiserver_request_total over response codes, and takes
// apiserver_watch_events_total and apiserver_watch_events_sizes_sum by kind.
func parseServerCounts(raw []byte) (serverCounts, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return serverCounts{}, err
	}
	out := serverCounts{}
	for name, fam := range families {
		for _, m := range fam.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch name {
			case "apiserver_request_total":
				res := labels["resource"]
				if sub := labels["subresource"]; sub != "" {
					res += "/" + sub
				}
				out[labels["verb"]+" "+res] += m.GetCounter().GetValue()
			case "apiserver_watch_events_total":
				out["watch events "+labels["kind"]+labels["resource"]] += m.GetCounter().GetValue()
			case "apiserver_watch_events_sizes":
				out["watch event bytes "+labels["kind"]+labels["resource"]] += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out, nil
}

func (s serverCounts) minus(earlier serverCounts) serverCounts {
	out := serverCounts{}
	for k, v := range s {
		if d := v - earlier[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// String lists the counts from the largest, leaving out what is too small to matter
// (fewer than 10 requests or 100 events, under 1 MB): "APPLY configmaps 1000, ...,
// watch event bytes services 37.8 MB".
func (s serverCounts) String() string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if s[a] != s[b] {
			if s[a] > s[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		switch v := s[k]; {
		case strings.HasPrefix(k, "watch event bytes "):
			if v >= 1e6 {
				parts = append(parts, fmt.Sprintf("%s %.1f MB", k, v/1e6))
			}
		case strings.HasPrefix(k, "watch events "):
			if v >= 100 {
				parts = append(parts, fmt.Sprintf("%s %.0f", k, v))
			}
		case v >= 10:
			parts = append(parts, fmt.Sprintf("%s %.0f", k, v))
		}
	}
	if len(parts) == 0 {
		return "not measured"
	}
	return strings.Join(parts, ", ")
}
