package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// Metrics are the controller's kubecel_* metrics; the queue's come from QueueProvider.
// Counters and the histogram are labelled by rule (and result or reason).
type Metrics struct {
	reg          *prometheus.Registry
	Reconciles   *prometheus.CounterVec
	Errors       *prometheus.CounterVec
	Panics       *prometheus.CounterVec
	Duration     *prometheus.HistogramVec
	Applies      *prometheus.CounterVec
	Prunes       *prometheus.CounterVec
	Teardowns    *prometheus.CounterVec
	Releases     *prometheus.CounterVec
	CELErrors    *prometheus.CounterVec
	ActiveRules  prometheus.Gauge
	PendingRules prometheus.Gauge
	RuleProblems *prometheus.CounterVec
	Yields       *prometheus.CounterVec
	QueueWait    *prometheus.HistogramVec
	LockWait     prometheus.Histogram
}

// New makes the metrics and registers them on reg.
func New(reg *prometheus.Registry) (*Metrics, error) {
	m := &Metrics{
		reg: reg,
		Reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecel_reconcile_total", Help: "Reconciles by rule and result (success, error).",
		}, []string{"rule", "result"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecel_reconcile_errors_total", Help: "Failed reconciles by rule and reason: the reason of the parent's Synced condition (EvaluationFailed, TooManyChildren, ChildExists, ApplyFailed, PruneFailed, ReconcilePanic), StatusFailed, or Other.",
		}, []string{"rule", "reason"}),
		Panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecel_reconcile_panics_total", Help: "Reconciles that panicked (recovered, counted as errors too), by rule.",
		}, []string{"rule"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kubecel_reconcile_duration_seconds", Help: "Time spent in one reconcile, by rule.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"rule"}),
		Applies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecel_apply_total", Help: "Server-side applies of children, by rule.",
		}, []string{"rule"}),
		Prunes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecel_prune_total", Help: "Children deleted because the rule no longer produces them, by rule.",
		}, []string{"rule"}),
		Teardowns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecel_parent_deletion_deletes_total", Help: "Children deleted by kubecel because their parent was deleted, by rule.",
		}, []string{"rule"}),
		Releases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecel_release_total", Help: "Children released instead of deleted (lifecycle Keep), by rule.",
		}, []string{"rule"}),
		CELErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecel_cel_evaluation_errors_total", Help: "Rule evaluations that failed, by rule.",
		}, []string{"rule"}),
		ActiveRules: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubecel_active_rules", Help: "Rules currently running.",
		}),
		PendingRules: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubecel_pending_rules", Help: "Rules not running: their kinds are not served or permissions are missing.",
		}),
		RuleProblems: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecel_rule_start_failures_total", Help: "Times a rule could not start, by rule and reason (KindNotServed, Forbidden, StartFailed, APIChangeRefused).",
		}, []string{"rule", "reason"}),
		Yields: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecel_reconcile_yields_total", Help: "Reconciles that sent their batch of writes and handed the worker on with work left (the parent is queued again at the back of its flow), by rule.",
		}, []string{"rule"}),
		QueueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kubecel_queue_wait_seconds", Help: "Time a parent waited in the queue before a worker took it, by whether its flow (namespace) had other parents waiting or running then (flow_busy).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"flow_busy"}),
		LockWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubecel_reconcile_lock_wait_seconds", Help: "Time a worker waited on the controller's own locks (a ring change's pause; the running rules are read without one) before it reconciles a parent it took from the queue.",
			Buckets: []float64{0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10},
		}),
	}
	for _, c := range []prometheus.Collector{m.Reconciles, m.Errors, m.Panics, m.Duration, m.Applies, m.Prunes, m.Teardowns, m.Releases, m.CELErrors, m.ActiveRules, m.PendingRules, m.RuleProblems, m.Yields, m.QueueWait, m.LockWait} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// ObserveReconcile counts one reconcile of rule by result and records its duration.
func (m *Metrics) ObserveReconcile(rule string, err error, d time.Duration) {
	result := "success"
	if err != nil {
		result = "error"
	}
	m.Reconciles.WithLabelValues(rule, result).Inc()
	m.Duration.WithLabelValues(rule).Observe(d.Seconds())
}

// ObserveWait records how long a parent waited in the queue.
func (m *Metrics) ObserveWait(busy bool, d time.Duration) {
	label := "false"
	if busy {
		label = "true"
	}
	m.QueueWait.WithLabelValues(label).Observe(d.Seconds())
}

// QueueProvider returns a workqueue metrics provider registering into m's registry,
// with the names client-go's workqueue metrics conventionally use.
func (m *Metrics) QueueProvider() workqueue.MetricsProvider { return queueMetrics{reg: m.reg} }

type queueMetrics struct{ reg *prometheus.Registry }

func (q queueMetrics) gauge(name, help, queue string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: "workqueue", Name: name, Help: help, ConstLabels: prometheus.Labels{"name": queue}})
	q.reg.MustRegister(g)
	return g
}

func (q queueMetrics) counter(name, help, queue string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Subsystem: "workqueue", Name: name, Help: help, ConstLabels: prometheus.Labels{"name": queue}})
	q.reg.MustRegister(c)
	return c
}

func (q queueMetrics) histogram(name, help, queue string) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Subsystem: "workqueue", Name: name, Help: help,
		ConstLabels: prometheus.Labels{"name": queue}, Buckets: prometheus.ExponentialBuckets(1e-6, 10, 9)})
	q.reg.MustRegister(h)
	return h
}

func (q queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return q.gauge("depth", "Current depth of the workqueue.", name)
}

func (q queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return q.counter("adds_total", "Adds handled by the workqueue.", name)
}

func (q queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return q.histogram("queue_duration_seconds", "Seconds an item stays in the workqueue before it is processed.", name)
}

func (q queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return q.histogram("work_duration_seconds", "Seconds processing an item from the workqueue takes.", name)
}

func (q queueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.gauge("unfinished_work_seconds", "Seconds of work in progress not yet observed by work_duration.", name)
}

func (q queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.gauge("longest_running_processor_seconds", "Seconds the longest running processor has been running.", name)
}

func (q queueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return q.counter("retries_total", "Retries handled by the workqueue.", name)
}
