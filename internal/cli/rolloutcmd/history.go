package rolloutcmd

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/revisions"
	"github.com/kubecel/kubecel/internal/rollout"
)

// historyMessageWidth is how many characters of a revision's message history shows.
const historyMessageWidth = 60

// History prints every stored revision of rule on s.Out, oldest first.
func History(ctx context.Context, o *Options, rule string, s clikit.Streams) error {
	c, err := o.connect(ctx, false)
	if err != nil {
		return err
	}
	revs, _, err := c.current(ctx, rule)
	if err != nil {
		return err
	}
	return printHistory(s.Out, revs)
}

// printHistory writes the revisions as a table.
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
