// Package examples is kubecel's gallery: each directory is one operator pattern solved
// by a rules file instead of a hand-written controller.
//
//   - webapp: a WebApp CRD becomes a Deployment, an optional Service and Ingress, and one
//     ConfigMap per configured entry; its status reports the URL and readiness.
//   - namespace-defaults: every Namespace with a label gets a ResourceQuota, a
//     LimitRange, a default-deny NetworkPolicy and a RoleBinding for its team.
//   - service-per-pod: an annotated StatefulSet gets one Service per replica.
//   - database: a Database CRD becomes a StatefulSet, a Service and a ConfigMap with a
//     connection URL that needs the Service's cluster IP, so it waits for the Service.
//   - worker: a Worker CRD reads the Secret it names and an optional per-namespace
//     ConfigMap of defaults (refs), and becomes a Deployment and a ConfigMap of the
//     Secret's key names.
//
// A directory holds crd.yaml (when the parent is a custom resource), rules.yaml (one
// rule, named like the directory), parents.yaml (sample parents), observed.yaml (where
// status or dependencies need children the cluster has already created), refs.yaml (the
// objects the sample parents read, where the rule has refs) and a README
// with the `kubecel render` output. The package's only code embeds these files for
// `kubecel dev` (Files, CRDs, Parents, and Rules, which joins the rules into one
// RuleSet); its tests load, check and render every example against golden files, and
// apply them to a real control plane.
package examples
