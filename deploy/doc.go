// Package deploy holds no code: the directory is kubecel's deployment, kustomizations
// applied with `kubectl apply -k deploy/` or `kubectl apply -k deploy/sharded` (see
// docs/operations.md), and the Helm chart in helm/ (see docs/install.md). The
// kustomizations are the chart's default render and its sharded and monitoring profiles,
// but for Helm's labels: deploy/helm's tests compare them object by object.
//
//   - kustomization.yaml: base/ as it is, two replicas with leader election.
//   - base/: the manifests and the rules, with the labels every object carries.
//   - base/namespace.yaml, serviceaccount.yaml, deployment.yaml and
//     poddisruptionbudget.yaml: the controller, two replicas with leader election,
//     non-root on a read-only filesystem.
//   - base/rbac.yaml: the aggregated ClusterRole kubecel-controller and its binding, the
//     fixed base ClusterRole kubecel-base (CRDs, access reviews, Events), and the Role
//     kubecel in kubecel-system (its rules ConfigMap, Events, the leader election Lease).
//   - base/rules.yaml: the rules, put into the ConfigMap kubecel-system/kubecel-rules.
//   - base/rules-rbac.yaml: what those rules need, printed by `kubecel rbac`; a test in
//     cmd/kubecel fails when it is stale.
//   - sharded/: an overlay of base/ with three replicas that run `kubecel run --sharding`
//     instead of leader election, and the Role's Lease verbs a sharded replica needs.
//   - monitoring/: a kustomization of its own (kubectl apply -k deploy/monitoring) with a
//     PodMonitor, the alerts (a PrometheusRule) and the Grafana dashboard; its own package
//     doc says more.
//   - helm/: the Helm chart, which make release packages, and its tests.
//
// Users' own overlays take deploy/ (or deploy/sharded) as their base; kustomize refuses a
// base that contains its overlay, so they live outside it.
//
// The tests render both kustomizations, server-side dry-run apply every object against a
// local control plane, check the Deployments' replicas, args and security settings, the
// permissions the roles give the controller's ServiceAccount (and, sharded, the requests
// a replica makes on its Lease), and that the rules load.
package deploy
