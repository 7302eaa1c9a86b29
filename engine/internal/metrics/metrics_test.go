package metrics

import (
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// gathered returns the value of every series of reg, by "name{label=value,...}"
// (histograms by their sample count).
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			key := f.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func TestObserveReconcile(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.ObserveReconcile("web", nil, time.Millisecond)
	m.ObserveReconcile("web", nil, time.Millisecond)
	m.ObserveReconcile("web", errors.New("boom"), time.Millisecond)
	m.ActiveRules.Set(1)
	got := gathered(t, reg)
	want := map[string]float64{
		"kubecel_reconcile_total{result=error,rule=web}":   1,
		"kubecel_reconcile_total{result=success,rule=web}": 2,
		"kubecel_reconcile_duration_seconds{rule=web}":     3,
		"kubecel_active_rules{}":                           1,
		"kubecel_pending_rules{}":                          0,
		"kubecel_reconcile_lock_wait_seconds{}":            0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	if _, err := New(reg); err == nil {
		t.Error("a second New on the same registry succeeded; want a duplicate registration error")
	}
}

func TestQueueProvider(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "kubecel", MetricsProvider: m.QueueProvider()})
	defer q.ShutDown()
	q.Add("a")
	q.Add("b")
	got := gathered(t, reg)
	for key, want := range map[string]float64{"workqueue_adds_total{name=kubecel}": 2, "workqueue_depth{name=kubecel}": 2} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
}

// TestFlows: the busiest TopFlows flows are named; the others are summed under
// "(other)", so the series stay few with any number of namespaces.
func TestFlows(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	flows := []Flow{
		{Name: "quiet", Waiting: 1, Oldest: time.Second},
		{Name: "heavy", Waiting: 40, Running: 16, Oldest: 3 * time.Second},
		{Name: "b", Waiting: 2}, {Name: "c", Waiting: 2}, {Name: "d", Waiting: 2}, {Name: "e", Waiting: 2},
		{Name: "/cluster-parent", Running: 1, Oldest: 0},
	}
	if err := m.RegisterFlows(func() []Flow { return slices.Clone(flows) }); err != nil {
		t.Fatal(err)
	}
	got := gathered(t, reg)
	want := map[string]float64{
		"kubecel_queue_flows{}":                                7,
		"kubecel_queue_flow_waiting{flow=heavy}":               40,
		"kubecel_queue_flow_waiting{flow=b}":                   2,
		"kubecel_queue_flow_waiting{flow=c}":                   2,
		"kubecel_queue_flow_waiting{flow=d}":                   2,
		"kubecel_queue_flow_waiting{flow=e}":                   2,
		"kubecel_queue_flow_waiting{flow=(other)}":             1,
		"kubecel_queue_flow_running{flow=heavy}":               16,
		"kubecel_queue_flow_running{flow=(other)}":             1,
		"kubecel_queue_flow_oldest_wait_seconds{flow=heavy}":   3,
		"kubecel_queue_flow_oldest_wait_seconds{flow=(other)}": 1,
	}
	for k, v := range got {
		if strings.HasPrefix(k, "kubecel_queue_flow") && want[k] != v {
			t.Errorf("%s = %v, want %v", k, v, want[k])
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v (missing?), want %v", k, got[k], v)
		}
	}
}
