package engine

import (
	"cmp"
	"fmt"

	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/rules"
)

// StableVersion compiles the stored revision from that a rollout of r rolls from (or
// that r is held at after a rollback), within rs, as the controller runs it beside r for
// the parents the rollout has not moved. The caller has checked from's proof. The
// commands that read the rules an installation runs (kubecel trace, plan) call it, so
// that they evaluate a parent at that revision exactly as the controller does.
func StableVersion(rs *rules.RuleSet, r *rules.Rule, from *rollout.Revision) (*rules.Rule, error) {
	stable, err := rs.Revise(r.Name, from.Document)
	if err != nil {
		return nil, fmt.Errorf("rule %q: compile revision %d (%s), which the rollout rolls from: %w", r.Name, from.Number, from.Hash, err)
	}
	// The version rolled from writes the Synced condition as its parents were last
	// written at that revision: naming it when the revision last ran under a policy (its
	// stored steps say; the document keeps the policy it was stored with). It never takes
	// steps: only whether it has a policy matters.
	switch {
	case len(from.Steps) == 0:
		stable.Rollout = nil
	case stable.Rollout == nil:
		stable.Rollout = cmp.Or(r.Rollout, &rules.Rollout{Steps: from.Steps})
	}
	return stable, nil
}
