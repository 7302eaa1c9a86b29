package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// NotReady is, at a scrape, how many parents of one rule were not Ready at their last
// reconcile, and for how long the first of them has been so.
type NotReady struct {
	Rule   string
	Count  int
	Oldest time.Duration
}

// notReadyCollector reports NotReady per rule at each scrape.
type notReadyCollector struct {
	read          func() []NotReady
	count, oldest *prometheus.Desc
}

// RegisterNotReady registers the per-rule gauges of parents that are not Ready, read
// from read at each scrape.
func (m *Metrics) RegisterNotReady(read func() []NotReady) error {
	return m.reg.Register(&notReadyCollector{
		read:   read,
		count:  prometheus.NewDesc("kubecel_parents_not_ready", "Parents this replica serves that were not Ready at their last reconcile, by rule.", []string{"rule"}, nil),
		oldest: prometheus.NewDesc("kubecel_parents_not_ready_oldest_seconds", "How long the parent that has been not Ready the longest has been so (0 when every parent is Ready), by rule.", []string{"rule"}, nil),
	})
}

func (c *notReadyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.count
	ch <- c.oldest
}

func (c *notReadyCollector) Collect(ch chan<- prometheus.Metric) {
	for _, n := range c.read() {
		ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(n.Count), n.Rule)
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, n.Oldest.Seconds(), n.Rule)
	}
}
