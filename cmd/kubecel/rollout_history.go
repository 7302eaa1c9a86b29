package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubecel/kubecel/internal/cli/revisions"
	"github.com/kubecel/kubecel/internal/rollout"
)

// historyMessageWidth is how many characters of a revision's message history shows.
const historyMessageWidth = 60

func newRolloutHistoryCommand() *cobra.Command {
	var o rolloutOptions
	cmd := &cobra.Command{
		Use:   "history RULE",
		Short: "List the stored revisions of a rule",
		Long: `history lists every stored revision of a rule, oldest first, as kubectl rollout history
does: its number, hash, phase, the step its rollout reached, when it was created (RFC
3339, UTC) and the start of its message (kubecel rollout status shows it whole). The
last row is the current revision. Exit status 0; 1 when the rule has no revision.`,
		Example: `  kubecel rollout history webapp`,
		Args:    ruleArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.connect(cmd.Context(), false)
			if err != nil {
				return err
			}
			revs, _, err := c.current(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printHistory(cmd.OutOrStdout(), revs)
		},
	}
	o.addFlags(cmd.Flags())
	cmd.ValidArgsFunction = o.ruleNames().complete(true)
	return cmd
}

func printHistory(w io.Writer, revs []*rollout.Revision) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tHASH\tPHASE\tSTEP\tCREATED\tMESSAGE")
	for _, r := range revs {
		step := "-"
		if r.Step > 0 {
			step = revisions.StepText(r.State)
		}
		created := "-"
		if r.Object != nil && !r.Object.CreationTimestamp.IsZero() {
			created = r.Object.CreationTimestamp.UTC().Format(time.RFC3339)
		}
		msg := "-"
		if r.Message != "" {
			msg = truncate(r.Message, historyMessageWidth)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", r.Number, r.Hash, r.Phase, step, created, msg)
	}
	return tw.Flush()
}

// truncate shortens s to n characters, ending in "..." when cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-3]) + "..."
}
