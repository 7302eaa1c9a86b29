package testenv

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Counter returns the value of the counter name whose label has value in reg, or 0 when
// there is none.
func Counter(t testing.TB, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	return metric(t, reg, name, label, value).GetCounter().GetValue()
}

// Gauge returns the value of the gauge name whose label has value in reg (with label
// "", of the unlabelled gauge name), and whether there is one.
func Gauge(t testing.TB, reg *prometheus.Registry, name, label, value string) (float64, bool) {
	t.Helper()
	m := metric(t, reg, name, label, value)
	return m.GetGauge().GetValue(), m != nil
}

// metric returns the sample of the metric name whose label has value in reg (with label
// "", the unlabelled sample), or nil.
func metric(t testing.TB, reg *prometheus.Registry, name, label, value string) *dto.Metric {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label == "" && len(m.GetLabel()) == 0 {
				return m
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m
				}
			}
		}
	}
	return nil
}
