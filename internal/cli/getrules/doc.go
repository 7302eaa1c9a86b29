// Package getrules is the logic of kubecel get rules: it reads the installation's
// stored revisions, checks their proofs, and lists each rule with its current revision,
// its rollout's phase and step, and how many of its parents are Ready, Synced and
// failing, as a table or data.
package getrules
