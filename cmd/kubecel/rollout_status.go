package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/revisions"
	"github.com/kubecel/kubecel/internal/rollout"
)

// maxFailing is how many parents that are not healthy status names.
const maxFailing = 10

type rolloutStatusOptions struct {
	rolloutOptions
	watch    bool
	interval time.Duration
	timeout  time.Duration
}

func newRolloutStatusCommand() *cobra.Command {
	var o rolloutStatusOptions
	cmd := &cobra.Command{
		Use:   "status RULE [--watch [--interval 2s] [--timeout DURATION]]",
		Short: "Show the rollout of a rule's current revision and where its parents are",
		Long: `status shows a rule's current revision: its number and hash, its phase, the step of a
rollout under way ("2 of 4 (10%)") and since when, the revision it rolls from, and its
message (a rollout paused or rolled back by its progress deadline names the parents that
failed). From the live parents (the objects of the rule's parent resource in its
namespaces that match its selector; its when: expression is not evaluated) it counts how many are at the revision and at the one it rolls from, and,
while the rollout is Progressing or Paused, names the members of the steps taken that
are not healthy (not at the revision, or not Ready), at most 10. The members are the
parents in the rollout's order: the canaries its policy names first.

After an undo (RolledBack) it says at which revision the rule is held until its text
changes. Exit status 0.

--watch (-w) reads the revision again every --interval and prints a line at each
change until the rollout is no longer Progressing: exit status 0 when it is Complete,
1 when it is Paused or RolledBack, and 1 when --timeout (0: none) passes first.`,
		Example: `  # where the rollout of the rule's current revision stands
  kubecel rollout status webapp

  # follow it until it completes, fails or 10 minutes pass
  kubecel rollout status webapp --watch --timeout 10m`,
		Args: ruleArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.interval <= 0 {
				return &clikit.UsageError{Msg: fmt.Sprintf("--interval %s: want a positive duration", o.interval), Command: cmd.CommandPath()}
			}
			if o.timeout < 0 {
				return &clikit.UsageError{Msg: fmt.Sprintf("--timeout %s: want a duration, 0 for none", o.timeout), Command: cmd.CommandPath()}
			}
			c, err := o.connect(cmd.Context(), false)
			if err != nil {
				return err
			}
			if o.watch {
				return c.watch(cmd.Context(), cmd.OutOrStdout(), args[0], o.interval, o.timeout)
			}
			v, err := c.view(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return v.print(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	o.addFlags(f)
	cmd.ValidArgsFunction = o.ruleNames().complete(true)
	f.BoolVarP(&o.watch, "watch", "w", false, "print each change until the rollout is no longer Progressing; exit 0 when Complete, 1 when Paused or RolledBack")
	f.DurationVar(&o.interval, "interval", 2*time.Second, "with --watch, how often to read the revision and its parents")
	f.DurationVar(&o.timeout, "timeout", 0, "with --watch, how long to wait before exiting 1 (0: no limit)")
	return cmd
}

// print writes the status of the current revision.
func (v *rolloutView) print(w io.Writer) error {
	cur := v.cur
	var b strings.Builder
	line := func(label, format string, args ...any) {
		fmt.Fprintf(&b, "%-10s %s\n", label+":", fmt.Sprintf(format, args...))
	}
	line("Rule", "%s", v.rule)
	line("Revision", "%d (%s)", cur.Number, cur.Hash)
	line("Phase", "%s", cur.Phase)
	if cur.Phase == rollout.Progressing || cur.Phase == rollout.Paused {
		step := revisions.StepText(cur.State)
		if !cur.StepStarted.IsZero() {
			step += ", started " + cur.StepStarted.UTC().Format(time.RFC3339)
		}
		if !cur.HealthySince.IsZero() {
			step += ", healthy since " + cur.HealthySince.UTC().Format(time.RFC3339)
		}
		line("Step", "%s", step)
	}
	if cur.From != "" {
		line("From", "%s", revisions.FromText(v.revs, cur.From))
	}
	if cur.Phase == rollout.RolledBack {
		line("Held", "at %s until the rule's text changes", revisions.FromText(v.revs, cur.From))
	}
	switch {
	case !v.parents:
		line("Parents", "unknown: the revision does not say where its parents are")
	case cur.From != "":
		line("Parents", "%d: %d at revision %d, %d at %s%s", v.total, v.atCur, cur.Number, v.atFrom, shortFrom(v.revs, cur.From), elsewhere(v.total-v.atCur-v.atFrom))
	default:
		line("Parents", "%d: %d at revision %d%s", v.total, v.atCur, cur.Number, elsewhere(v.total-v.atCur))
	}
	if v.parents && (cur.Phase == rollout.Progressing || cur.Phase == rollout.Paused) {
		members := fmt.Sprintf("%d in the steps taken", v.members)
		if len(v.failing) > 0 {
			members += fmt.Sprintf(", %d not healthy:", len(v.failing))
		} else {
			members += ", all healthy"
		}
		line("Members", "%s", members)
		for i, f := range v.failing {
			if i == maxFailing {
				fmt.Fprintf(&b, "  and %d more\n", len(v.failing)-maxFailing)
				break
			}
			fmt.Fprintf(&b, "  %s\n", f)
		}
	}
	if cur.Message != "" {
		line("Message", "%s", cur.Message)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// shortFrom names the revision rolled from by number ("revision 2"), or by hash when it
// is no longer stored.
func shortFrom(revs []*rollout.Revision, hash string) string {
	if r := rollout.Find(revs, hash); r != nil {
		return fmt.Sprintf("revision %d", r.Number)
	}
	return "revision " + hash
}

func elsewhere(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d at neither (not reconciled yet, or failing)", n)
}

// summary is the one line --watch prints at each change.
func (v *rolloutView) summary() string {
	cur := v.cur
	s := fmt.Sprintf("rule %s: %s is %s", v.rule, revisions.Text(cur), cur.Phase)
	at, atN := cur.Number, v.atCur
	switch cur.Phase {
	case rollout.Progressing, rollout.Paused:
		s += " at step " + revisions.StepText(cur.State)
	case rollout.RolledBack:
		s += fmt.Sprintf("; held at %s until the rule's text changes", revisions.FromText(v.revs, cur.From))
		if from := rollout.Find(v.revs, cur.From); from != nil {
			at, atN = from.Number, v.atFrom
		}
	}
	if v.parents {
		s += fmt.Sprintf("; %d of %d parents at revision %d", atN, v.total, at)
	}
	if cur.Message != "" && cur.Phase != rollout.Progressing {
		s += ": " + cur.Message
	}
	return s
}

// watch prints a line at each change of a rule's current revision until its rollout is
// no longer Progressing.
func (c *rolloutClient) watch(ctx context.Context, w io.Writer, rule string, interval, timeout time.Duration) error {
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	last := ""
	for {
		v, err := c.view(ctx, rule)
		if err != nil {
			return err
		}
		if s := v.summary(); s != last {
			if _, err := fmt.Fprintln(w, s); err != nil {
				return err
			}
			last = s
		}
		switch v.cur.Phase {
		case rollout.Progressing:
		case rollout.Complete:
			return nil
		default:
			return &clikit.ExitError{Code: 1}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return &clikit.ExitError{Code: 1, Err: fmt.Errorf("rule %q: %s is still Progressing at step %s after --timeout %s", rule, revisions.Text(v.cur), revisions.StepText(v.cur.State), timeout)}
		case <-time.After(interval):
		}
	}
}
