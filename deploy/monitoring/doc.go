// Package monitoring holds no code: the directory is kubecel's monitoring, a
// kustomization applied with `kubectl apply -k deploy/monitoring` (see "Dashboards and
// alerts" in docs/operations.md).
//
//   - podmonitor.yaml: a Prometheus Operator PodMonitor that scrapes every replica.
//   - prometheusrule.yaml: the alerts, each with a runbook section of docs/operations.md.
//   - grafana-dashboard.json: the Grafana dashboard, put into the ConfigMap
//     kubecel-system/kubecel-dashboard for Grafana's dashboard sidecar.
//   - metrics.txt: the metrics the dashboard and the alerts read.
//   - check/: a module of its own whose test parses every expression with Prometheus's
//     parser and keeps metrics.txt current (make monitoring-check).
//
// The test here renders the kustomization and checks the alerts' shape and the
// dashboard's panels; cmd/kubecel/testdata/script/cluster/monitoring.txtar checks that a
// running kubecel serves every metric of metrics.txt.
package monitoring
