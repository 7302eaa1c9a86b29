// Package helm holds no code: the directory holds kubecel's Helm chart, kubecel/, which
// make release packages as kubecel-<version>.tgz (see docs/install.md).
//
//   - kubecel/Chart.yaml, README.md (helm show readme), values.yaml and
//     values.schema.json, which describes every value and refuses unknown ones;
//     templates/ and files/ (the dashboard and the alerts of deploy/monitoring, which the
//     tests keep equal to them).
//   - kubecel/profiles/: values for documented setups: ha.yaml (three replicas with
//     leader election), sharded.yaml, selector.yaml (rules from every ConfigMap with a
//     label) and monitoring.yaml (PodMonitor, alerts, dashboard).
//   - testdata/crds/: minimal CRDs of the Prometheus Operator's kinds, for the tests.
//
// The tests render the chart with bin/helm (make tools) and check that its default render
// is deploy/'s kustomization, its sharded profile deploy/sharded's and its monitoring
// profile deploy/ and deploy/monitoring's, object by object, but for Helm's own labels;
// that helm lint --strict passes with every profile; that values.schema.json describes
// every value and refuses bad ones; that every object of every profile passes a
// server-side dry run on the local control plane; and that kubecel, run as the chart's
// ServiceAccount with the chart's RBAC (aggregated by kube-controller-manager), converges
// the example rule, for two releases in one cluster.
package helm
