package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/rolloutcmd"
)

func newRolloutCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Show and steer the progressive rollouts of a rule's revisions",
		Long: `Each edit of a rule that has a rollout policy makes a new revision of the rule, which
the controller rolls out to the rule's parents step by step. The revisions are
ControllerRevisions in kubecel's namespace (the namespace of the identity Secret),
labelled with the installation and the rule; the highest-numbered is the current one.

  status    the current revision, its phase and step, and where the parents are
  history   every stored revision of the rule
  pause     stop a rollout under way from taking further steps
  resume    let a paused rollout go on
  undo      send every parent back to the revision the current one rolled from

The commands read and write only the revisions (and status lists the parents); they
never read the installation's key.`,
		Example: `  kubecel rollout status webapp
  kubecel rollout pause webapp
  kubecel rollout undo webapp`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return &clikit.UsageError{Msg: "give a subcommand: status, history, pause, resume or undo", Command: cmd.CommandPath()}
		},
	}
	cmd.AddCommand(newRolloutStatusCommand(), newRolloutHistoryCommand(),
		newRolloutOpCommand(pauseHelp), newRolloutOpCommand(resumeHelp), newRolloutOpCommand(undoHelp))
	return cmd
}

// rolloutRuleNames completes the names of the rules the installation runs.
func rolloutRuleNames(o *rolloutcmd.Options) ruleNames {
	return ruleNames{cluster: o.Cluster, identity: &o.Identity}
}

// addRolloutFlags adds the connection and identity flags of every rollout subcommand.
func addRolloutFlags(f *pflag.FlagSet, o *rolloutcmd.Options) {
	o.Cluster = clikit.NewClusterFlags()
	o.Cluster.AddFlags(f, "kubeconfig file (default: $KUBECONFIG, ~/.kube/config or in-cluster)")
	o.Identity.AddFlags(f)
	f.Lookup("identity-secret").Usage = "NAMESPACE/NAME of the installation's identity Secret: the revisions are in its namespace, and their proofs are checked with its key; pause, resume and undo sign the state they write with it (default: <installation>-identity in the pod's namespace in a cluster, kubecel-system outside one)"
}

// ruleArg checks that a subcommand was given one rule.
func ruleArg(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return &clikit.UsageError{Msg: "give the rule's name: " + cmd.CommandPath() + " RULE", Command: cmd.CommandPath()}
	case len(args) > 1:
		return &clikit.UsageError{Msg: fmt.Sprintf("give one rule, not %d (%s)", len(args), strings.Join(args, " ")), Command: cmd.CommandPath()}
	}
	return nil
}

func newRolloutHistoryCommand() *cobra.Command {
	var o rolloutcmd.Options
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
			return rolloutcmd.History(cmd.Context(), &o, args[0], streamsOf(cmd))
		},
	}
	addRolloutFlags(cmd.Flags(), &o)
	cmd.ValidArgsFunction = rolloutRuleNames(&o).complete(true)
	return cmd
}

func newRolloutStatusCommand() *cobra.Command {
	var o rolloutcmd.StatusOptions
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
			if o.Interval <= 0 {
				return &clikit.UsageError{Msg: fmt.Sprintf("--interval %s: want a positive duration", o.Interval), Command: cmd.CommandPath()}
			}
			if o.Timeout < 0 {
				return &clikit.UsageError{Msg: fmt.Sprintf("--timeout %s: want a duration, 0 for none", o.Timeout), Command: cmd.CommandPath()}
			}
			return rolloutcmd.Status(cmd.Context(), &o, args[0], streamsOf(cmd))
		},
	}
	f := cmd.Flags()
	addRolloutFlags(f, &o.Options)
	cmd.ValidArgsFunction = rolloutRuleNames(&o.Options).complete(true)
	f.BoolVarP(&o.Watch, "watch", "w", false, "print each change until the rollout is no longer Progressing; exit 0 when Complete, 1 when Paused or RolledBack")
	f.DurationVar(&o.Interval, "interval", 2*time.Second, "with --watch, how often to read the revision and its parents")
	f.DurationVar(&o.Timeout, "timeout", 0, "with --watch, how long to wait before exiting 1 (0: no limit)")
	return cmd
}

// rolloutOpHelp is the help of a subcommand that changes a rule's current revision.
type rolloutOpHelp struct {
	op          rolloutcmd.Op
	short, long string
}

var pauseHelp = rolloutOpHelp{
	op:    rolloutcmd.Pause,
	short: "Stop a rule's rollout under way from taking further steps",
	long: `pause stops the rollout of a rule's current revision at its step: the parents already
moved stay at the new revision, the others at the one it rolls from, until kubecel
rollout resume. Only a Progressing rollout can be paused.`,
}

var resumeHelp = rolloutOpHelp{
	op:    rolloutcmd.Resume,
	short: "Let a rule's paused rollout go on",
	long: `resume lets the paused rollout of a rule's current revision go on from its step; the
step's progress deadline starts again. Only a Paused rollout can be resumed.`,
}

var undoHelp = rolloutOpHelp{
	op:    rolloutcmd.Undo,
	short: "Send every parent of a rule back to the revision its current one rolled from",
	long: `undo marks a rule's current revision RolledBack: every parent goes back to the revision
it rolled from, and the rule is held there until its text changes (an edit of the rules
starts a new rollout). A revision already rolled back, or a rule's first revision,
cannot be undone.`,
}

func newRolloutOpCommand(h rolloutOpHelp) *cobra.Command {
	op := h.op
	var o rolloutcmd.Options
	cmd := &cobra.Command{
		Use:   op.Name + " RULE",
		Short: h.short,
		Long: h.long + `

It writes the revision's rollout annotations, on the version it read (a conflicting
write is read again and retried), and prints one line saying what happened. Exit
status 0 when done; 1 when the operation does not apply to the revision's phase, the
rule has no revision, or the cluster refuses.`,
		Example: "  kubecel rollout " + op.Name + " webapp",
		Args:    ruleArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			return rolloutcmd.Apply(cmd.Context(), &o, op, args[0], streamsOf(cmd))
		},
	}
	addRolloutFlags(cmd.Flags(), &o)
	cmd.ValidArgsFunction = rolloutRuleNames(&o).complete(true)
	return cmd
}
