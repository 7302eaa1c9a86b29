package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Rollout is, at a scrape, where one running rule's revisions stand.
type Rollout struct {
	Rule string
	// Revision is the rule's current revision (hash) and Number its number; Phase the
	// phase of its rollout, Step the steps taken of Steps.
	Revision    string
	Number      int64
	Phase       string
	Step, Steps int
	// Parents counts the rule's parents by the revision they are at ("" for a parent
	// whose Synced condition names none).
	Parents map[string]int
}

// Phases are the phases kubecel_rollout_phase reports, one series each.
var Phases = []string{"Progressing", "Paused", "Complete", "RolledBack"}

type rolloutCollector struct {
	read                        func() []Rollout
	phase, step, steps, parents *prometheus.Desc
}

// RegisterRollouts registers the per-rule rollout gauges, read from read at each scrape.
func (m *Metrics) RegisterRollouts(read func() []Rollout) error {
	return m.reg.Register(&rolloutCollector{
		read:    read,
		phase:   prometheus.NewDesc("kubecel_rollout_phase", "1 for the phase of the rollout of each rule's current revision, 0 for the others.", []string{"rule", "revision", "number", "phase"}, nil),
		step:    prometheus.NewDesc("kubecel_rollout_step", "Steps the rollout of each rule's current revision has taken.", []string{"rule"}, nil),
		steps:   prometheus.NewDesc("kubecel_rollout_steps", "Steps in the rollout policy of each rule (0 without one).", []string{"rule"}, nil),
		parents: prometheus.NewDesc("kubecel_rule_parents", "Parents of each rule by the revision their Synced condition names (\"\" for none).", []string{"rule", "revision"}, nil),
	})
}

func (c *rolloutCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.phase
	ch <- c.step
	ch <- c.steps
	ch <- c.parents
}

func (c *rolloutCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range c.read() {
		number := strconv.FormatInt(r.Number, 10)
		for _, p := range Phases {
			v := 0.0
			if p == r.Phase {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.phase, prometheus.GaugeValue, v, r.Rule, r.Revision, number, p)
		}
		ch <- prometheus.MustNewConstMetric(c.step, prometheus.GaugeValue, float64(r.Step), r.Rule)
		ch <- prometheus.MustNewConstMetric(c.steps, prometheus.GaugeValue, float64(r.Steps), r.Rule)
		for rev, n := range r.Parents {
			ch <- prometheus.MustNewConstMetric(c.parents, prometheus.GaugeValue, float64(n), r.Rule, rev)
		}
	}
}
