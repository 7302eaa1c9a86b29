package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubecel/kubecel/internal/cli/revisions"
	"github.com/kubecel/kubecel/internal/rollout"
)

// rolloutOp is one of the subcommands that change a rule's current revision.
type rolloutOp struct {
	name, short, long string
	// decide is the state the current revision moves to, or why it cannot.
	decide func(cur *rollout.Revision, revs []*rollout.Revision, now time.Time) (rollout.State, error)
	// done says what happened, once written.
	done func(rule string, cur *rollout.Revision, revs []*rollout.Revision) string
}

var pauseOp = rolloutOp{
	name:  "pause",
	short: "Stop a rule's rollout under way from taking further steps",
	long: `pause stops the rollout of a rule's current revision at its step: the parents already
moved stay at the new revision, the others at the one it rolls from, until kubecel
rollout resume. Only a Progressing rollout can be paused.`,
	decide: func(cur *rollout.Revision, _ []*rollout.Revision, _ time.Time) (rollout.State, error) {
		return rollout.Pause(cur)
	},
	done: func(rule string, cur *rollout.Revision, _ []*rollout.Revision) string {
		return fmt.Sprintf("rule %s: paused at step %s", rule, revisions.StepText(cur.State))
	},
}

var resumeOp = rolloutOp{
	name:  "resume",
	short: "Let a rule's paused rollout go on",
	long: `resume lets the paused rollout of a rule's current revision go on from its step; the
step's progress deadline starts again. Only a Paused rollout can be resumed.`,
	decide: func(cur *rollout.Revision, _ []*rollout.Revision, now time.Time) (rollout.State, error) {
		return rollout.Resume(cur, now)
	},
	done: func(rule string, cur *rollout.Revision, _ []*rollout.Revision) string {
		return fmt.Sprintf("rule %s: resumed at step %s", rule, revisions.StepText(cur.State))
	},
}

var undoOp = rolloutOp{
	name:  "undo",
	short: "Send every parent of a rule back to the revision its current one rolled from",
	long: `undo marks a rule's current revision RolledBack: every parent goes back to the revision
it rolled from, and the rule is held there until its text changes (an edit of the rules
starts a new rollout). A revision already rolled back, or a rule's first revision,
cannot be undone.`,
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

func newRolloutOpCommand(op rolloutOp) *cobra.Command {
	var o rolloutOptions
	cmd := &cobra.Command{
		Use:   op.name + " RULE",
		Short: op.short,
		Long: op.long + `

It writes the revision's rollout annotations, on the version it read (a conflicting
write is read again and retried), and prints one line saying what happened. Exit
status 0 when done; 1 when the operation does not apply to the revision's phase, the
rule has no revision, or the cluster refuses.`,
		Example: "  kubecel rollout " + op.name + " webapp",
		Args:    ruleArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.connect(cmd.Context(), true)
			if err != nil {
				return err
			}
			line, err := c.apply(cmd.Context(), op, args[0])
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), line)
			return err
		},
	}
	o.addFlags(cmd.Flags())
	cmd.ValidArgsFunction = o.ruleNames().complete(true)
	return cmd
}

// apply does op on a rule's current revision and says what happened.
func (c *rolloutClient) apply(ctx context.Context, op rolloutOp, rule string) (string, error) {
	for attempt := 1; ; attempt++ {
		revs, cur, err := c.current(ctx, rule)
		if err != nil {
			return "", err
		}
		st, err := op.decide(cur, revs, time.Now())
		if err != nil {
			return "", fmt.Errorf("rule %q: cannot %s: %w", rule, op.name, err)
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
