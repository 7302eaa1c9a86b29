package rolloutcmd

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/revisions"
	"github.com/kubecel/kubecel/internal/rollout"
)

// Op is one of the subcommands that change a rule's current revision.
type Op struct {
	// Name is the subcommand's name.
	Name string
	// decide is the state the current revision moves to, or why it cannot.
	decide func(cur *rollout.Revision, revs []*rollout.Revision, now time.Time) (rollout.State, error)
	// done says what happened, once written.
	done func(rule string, cur *rollout.Revision, revs []*rollout.Revision) string
}

// Pause stops a Progressing rollout at its step.
var Pause = Op{
	Name: "pause",
	decide: func(cur *rollout.Revision, _ []*rollout.Revision, _ time.Time) (rollout.State, error) {
		return rollout.Pause(cur)
	},
	done: func(rule string, cur *rollout.Revision, _ []*rollout.Revision) string {
		return fmt.Sprintf("rule %s: paused at step %s", rule, revisions.StepText(cur.State))
	},
}

// Resume lets a Paused rollout go on from its step.
var Resume = Op{
	Name: "resume",
	decide: func(cur *rollout.Revision, _ []*rollout.Revision, now time.Time) (rollout.State, error) {
		return rollout.Resume(cur, now)
	},
	done: func(rule string, cur *rollout.Revision, _ []*rollout.Revision) string {
		return fmt.Sprintf("rule %s: resumed at step %s", rule, revisions.StepText(cur.State))
	},
}

// Undo marks the current revision RolledBack: every parent goes back to the revision
// it rolled from.
var Undo = Op{
	Name: "undo",
	decide: func(cur *rollout.Revision, revs []*rollout.Revision, _ time.Time) (rollout.State, error) {
		return rollout.Undo(cur, revs)
	},
	done: func(rule string, cur *rollout.Revision, revs []*rollout.Revision) string {
		return fmt.Sprintf("rule %s: rolled back from %s to %s; held there until the rule's text changes",
			rule, revisions.Text(cur), revisions.FromText(revs, cur.From))
	},
}

// conflictRetries is how many times an operation reads the revision again after a
// Conflict (someone, such as the controller, wrote it in between).
const conflictRetries = 5

// Apply changes rule's current revision as op says, and prints on s.Out what happened.
func Apply(ctx context.Context, o *Options, op Op, rule string, s clikit.Streams) error {
	c, err := o.connect(ctx, true)
	if err != nil {
		return err
	}
	line, err := c.apply(ctx, op, rule)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(s.Out, line)
	return err
}

// Apply does op on a rule's current revision and says what happened.
func (c *rolloutClient) apply(ctx context.Context, op Op, rule string) (string, error) {
	for attempt := 1; ; attempt++ {
		revs, cur, err := c.current(ctx, rule)
		if err != nil {
			return "", err
		}
		st, err := op.decide(cur, revs, time.Now())
		if err != nil {
			return "", fmt.Errorf("rule %q: cannot %s: %w", rule, op.Name, err)
		}
		updated, err := c.store.Update(ctx, cur, cur.Number, st)
		if apierrors.IsConflict(err) && attempt < conflictRetries {
			continue
		}
		if err != nil {
			return "", err
		}
		line := op.done(rule, updated, revs)
		if !cur.StateProven {
			line += fmt.Sprintf("\nnote: the state %s held was not written by this installation (its proof did not verify); the one written now is", revisions.Text(cur))
		}
		return line, nil
	}
}
