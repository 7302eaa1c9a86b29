package shard

import "github.com/prometheus/client_golang/prometheus"

// memberMetrics are the kubecel_shard_* metrics of one member; engine adds
// kubecel_shard_owned_parents.
type memberMetrics struct {
	members         prometheus.Gauge
	buckets         prometheus.Gauge
	handovers       prometheus.Counter
	handoverSeconds prometheus.Histogram
}

func newMemberMetrics(reg *prometheus.Registry) (*memberMetrics, error) {
	m := &memberMetrics{
		members: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubecel_shard_members", Help: "Live members of the ring, as this replica sees them.",
		}),
		buckets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubecel_shard_buckets", Help: "Buckets this replica serves, of 256.",
		}),
		handovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kubecel_shard_handovers_total", Help: "Ring changes this replica has completed: every member acknowledged the ring, and this replica serves its buckets in it.",
		}),
		handoverSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubecel_shard_handover_duration_seconds",
			Help:    "From seeing a ring change until every parent that moved to this replica has been reconciled once.",
			Buckets: prometheus.ExponentialBuckets(0.25, 2, 10),
		}),
	}
	for _, c := range []prometheus.Collector{m.members, m.buckets, m.handovers, m.handoverSeconds} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
