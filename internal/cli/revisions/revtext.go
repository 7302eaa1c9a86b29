package revisions

import (
	"fmt"

	"github.com/kubecel/kubecel/internal/rollout"
)

// StepText names a revision's step: "2 of 4 (10%)", or "2" when its steps are unknown.
func StepText(s rollout.State) string {
	if s.Step < 1 || s.Step > len(s.Steps) {
		return fmt.Sprint(s.Step)
	}
	return fmt.Sprintf("%d of %d (%g%%)", s.Step, len(s.Steps), s.Steps[s.Step-1])
}

// Text names a revision by number and hash: "revision 3 (5d1f0c2a)".
func Text(r *rollout.Revision) string {
	return fmt.Sprintf("revision %d (%s)", r.Number, r.Hash)
}

// FromText names the revision a rollout rolls from, by number when it is stored.
func FromText(revs []*rollout.Revision, hash string) string {
	if r := rollout.Find(revs, hash); r != nil {
		return Text(r)
	}
	return "revision " + hash + " (no longer stored)"
}
