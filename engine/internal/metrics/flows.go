package metrics

import (
	"cmp"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Flow is the state of one flow of the controller's fair queue (a tenant, a team's
// ConfigMap, a namespace, or a share of a rule's cluster-scoped parents) at a scrape.
type Flow struct {
	Name    string
	Waiting int           // keys waiting
	Running int           // reconciles running
	Oldest  time.Duration // wait of its oldest waiting key
}

// TopFlows is how many flows the per-flow series name, the busiest first; the rest are
// summed under the flow "(other)", so the series stay few however many namespaces
// there are.
const TopFlows = 5

// OtherFlows is the flow label of the sum of the flows beyond TopFlows.
const OtherFlows = "(other)"

// flowCollector reports, at each scrape, the number of flows with work and, for the
// TopFlows flows with the most keys waiting and running, their waiting and running
// keys and their oldest key's wait.
type flowCollector struct {
	read                    func() []Flow
	flows, waiting, running *prometheus.Desc
	oldest                  *prometheus.Desc
}

// RegisterFlows registers the per-flow gauges, read from read at each scrape.
func (m *Metrics) RegisterFlows(read func() []Flow) error {
	return m.reg.Register(&flowCollector{
		read:    read,
		flows:   prometheus.NewDesc("kubecel_queue_flows", "Flows (tenants, teams' ConfigMaps, namespaces, shares of a rule's cluster-scoped parents) with parents waiting in the queue or being reconciled.", nil, nil),
		waiting: prometheus.NewDesc("kubecel_queue_flow_waiting", "Parents waiting in the queue, for the busiest flows (\"KEY=VALUE\" for a tenant, \"configmap NS/NAME\", a namespace, \"/RULE/N\" for cluster-scoped parents) and \"(other)\".", []string{"flow"}, nil),
		running: prometheus.NewDesc("kubecel_queue_flow_running", "Parents being reconciled, for the busiest flows and \"(other)\".", []string{"flow"}, nil),
		oldest:  prometheus.NewDesc("kubecel_queue_flow_oldest_wait_seconds", "How long the oldest waiting parent of each of the busiest flows (and of the others) has waited.", []string{"flow"}, nil),
	})
}

func (c *flowCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.flows
	ch <- c.waiting
	ch <- c.running
	ch <- c.oldest
}

func (c *flowCollector) Collect(ch chan<- prometheus.Metric) {
	flows := c.read()
	ch <- prometheus.MustNewConstMetric(c.flows, prometheus.GaugeValue, float64(len(flows)))
	slices.SortFunc(flows, func(a, b Flow) int {
		return cmp.Or(cmp.Compare(b.Waiting+b.Running, a.Waiting+a.Running), cmp.Compare(a.Name, b.Name))
	})
	emit := func(f Flow) {
		ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(f.Waiting), f.Name)
		ch <- prometheus.MustNewConstMetric(c.running, prometheus.GaugeValue, float64(f.Running), f.Name)
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, f.Oldest.Seconds(), f.Name)
	}
	other := Flow{Name: OtherFlows}
	for i, f := range flows {
		if i < TopFlows {
			emit(f)
			continue
		}
		other.Waiting += f.Waiting
		other.Running += f.Running
		other.Oldest = max(other.Oldest, f.Oldest)
	}
	emit(other)
}
