// Package plan is the logic of kubecel plan: it loads the rules (the installation's
// running revisions unless others are given), lets a dry-run controller list the
// cluster, plans every parent once (children to create, update, prune or release, and
// status), finds the rules the new rules drop, what their api blocks would do to CRDs
// and how rules with a rollout policy would reach their parents, and prints the plan as
// text or data. Nothing in the cluster changes.
package plan
