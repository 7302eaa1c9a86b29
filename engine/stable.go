package engine

import (
	"github.com/kubecel/kubecel/engine/internal/rollouts"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/rules"
)

// StableVersion compiles the stored revision from that a rollout of r rolls from (or
// that r is held at after a rollback), within rs, as the controller runs it beside r for
// the parents the rollout has not moved. The caller has checked from's proof. The
// commands that read the rules an installation runs (kubecel trace, plan) call it, so
// that they evaluate a parent at that revision exactly as the controller does.
func StableVersion(rs *rules.RuleSet, r *rules.Rule, from *rollout.Revision) (*rules.Rule, error) {
	return rollouts.StableVersion(rs, r, from)
}
