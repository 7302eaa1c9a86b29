package monitoring_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kubecel/kubecel/deploy/internal/kustomized"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestKustomization renders the kustomization as `kubectl kustomize deploy/monitoring`
// does: the PodMonitor, the PrometheusRule, and the dashboard's ConfigMap holding
// grafana-dashboard.json as it is, labelled for Grafana's sidecar.
func TestKustomization(t *testing.T) {
	objs := kustomized.Render(t, ".")
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	slices.Sort(got)
	want := []string{"ConfigMap kubecel-system/kubecel-dashboard", "PodMonitor kubecel-system/kubecel", "PrometheusRule kubecel-system/kubecel"}
	if !slices.Equal(got, want) {
		t.Fatalf("objects %v, want %v", got, want)
	}
	dashboard, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" {
			continue
		}
		if o.GetLabels()["grafana_dashboard"] != "1" {
			t.Errorf("the ConfigMap's labels %v lack grafana_dashboard: \"1\"", o.GetLabels())
		}
		data, _, _ := unstructured.NestedString(o.Object, "data", "grafana-dashboard.json")
		if data != string(dashboard) {
			t.Error("the ConfigMap does not hold grafana-dashboard.json as it is")
		}
	}
}

// TestAlerts checks that the alerts the operations docs promise exist, and that each
// waits (for), has a severity, and says what happened, what to do and where to read on.
// internal/docstest checks that each runbook names a section of the docs.
func TestAlerts(t *testing.T) {
	data, err := os.ReadFile("prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert       string            `json:"alert"`
					Expr        string            `json:"expr"`
					For         string            `json:"for"`
					Labels      map[string]string `json:"labels"`
					Annotations map[string]string `json:"annotations"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &rule); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			names = append(names, r.Alert)
			if r.Expr == "" || r.For == "" {
				t.Errorf("%s: want an expr and a for", r.Alert)
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("%s: severity %q, want warning or critical", r.Alert, s)
			}
			for _, key := range []string{"summary", "description", "runbook"} {
				if r.Annotations[key] == "" {
					t.Errorf("%s: no %s annotation", r.Alert, key)
				}
			}
			if !strings.HasPrefix(r.Annotations["runbook"], "docs/operations.md#") {
				t.Errorf("%s: runbook %q is not a section of docs/operations.md", r.Alert, r.Annotations["runbook"])
			}
		}
	}
	for _, want := range []string{"KubecelRulesFailingToLoad", "KubecelReconcileErrors", "KubecelParentsNotReady", "KubecelQueueBackedUp", "KubecelShardBucketsUnserved"} {
		if !slices.Contains(names, want) {
			t.Errorf("no alert %s (alerts: %v)", want, names)
		}
	}
}

// TestDashboard checks that the dashboard has a row for each part the operations docs
// list, and that every panel queries the data source the dashboard lets users pick.
func TestDashboard(t *testing.T) {
	data, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Type       string
			Title      string
			Datasource struct{ UID string }
			Targets    []struct{ Expr string }
		}
	}
	if err := yaml.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, p := range dash.Panels {
		if p.Type == "row" {
			rows = append(rows, p.Title)
			continue
		}
		if p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: data source %q and %d queries, want ${datasource} and some", p.Title, p.Datasource.UID, len(p.Targets))
		}
	}
	want := []string{"Rules", "Reconciles", "Errors", "Queue", "Writes", "Shard ring (with --sharding)", "Memory"}
	if !slices.Equal(rows, want) {
		t.Errorf("rows %q, want %q", rows, want)
	}
}
