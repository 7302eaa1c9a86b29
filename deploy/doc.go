// Package deploy holds no code: the directory is kubecel's deployment, a kustomization
// applied with `kubectl apply -k deploy/` (see docs/operations.md), and its Dockerfile.
//
//   - namespace.yaml, serviceaccount.yaml, deployment.yaml, poddisruptionbudget.yaml: the
//     controller, two replicas with leader election, non-root on a read-only filesystem.
//   - rbac.yaml: the aggregated ClusterRole kubecel-controller and its binding, the fixed
//     base ClusterRole kubecel-base (CRDs, access reviews, Events), and the Role kubecel
//     in kubecel-system (its rules ConfigMap, Events, the leader election Lease).
//   - rules.yaml: the rules, put into the ConfigMap kubecel-system/kubecel-rules.
//   - rules-rbac.yaml: what those rules need, printed by `kubecel rbac`; a test in
//     cmd/kubecel fails when it is stale.
//   - Dockerfile: the static, non-root image (build from the repository root).
//
// ../deploy-sharded is an overlay of this kustomization (`kubectl apply -k
// deploy-sharded`): three replicas with `kubecel run --sharding` instead of leader
// election, and the Role's Lease verbs a sharded replica needs. It lives beside deploy/
// because kustomize refuses a base that contains its overlay.
//
// The tests render both kustomizations, server-side dry-run apply every object against a
// local control plane, check the Deployments' replicas, args and security settings, the
// permissions the roles give the controller's ServiceAccount (and, sharded, the requests
// a replica makes on its Lease), and that the rules load.
package deploy
