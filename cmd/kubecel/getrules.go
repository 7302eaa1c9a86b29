package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/getrules"
)

func newGetCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get TYPE",
		Short: "List kubecel's own objects in the cluster: get rules",
		Long: `get lists what kubecel keeps in the cluster, as kubectl get lists objects. Its one
type is rules (kubecel get rules): the installation's rules, from their stored revisions.`,
		Example: `  kubecel get rules`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &clikit.UsageError{Msg: "give a type: kubecel get rules", Command: cmd.CommandPath()}
			}
			return &clikit.UsageError{Msg: fmt.Sprintf("unknown type %q: kubecel get lists rules (kubecel get rules)", args[0]), Command: cmd.CommandPath()}
		},
	}
	cmd.AddCommand(newGetRulesCommand())
	return cmd
}

func newGetRulesCommand() *cobra.Command {
	var output clikit.OutputFlag
	o := getrules.Options{Cluster: clikit.NewClusterFlags()}
	cmd := &cobra.Command{
		Use:     "rules [NAME...] [-o wide|json|yaml]",
		Aliases: []string{"rule"},
		Short:   "List the installation's rules: revision, rollout phase, parents Ready, Synced and failing",
		Long: `get rules lists the rules the installation runs, as kubectl get lists a kind: one row per
rule, from its current revision (the ControllerRevisions the controller stores in the
identity Secret's namespace, read only when their proof verifies under the installation's
key), and from its parents (the objects of its parent resource in its namespaces that
match its selector; its when: expression is not evaluated):

  NAME       the rule
  REVISION   the current revision's number, HASH its hash
  PHASE      its rollout's phase: Complete, Progressing, Paused or RolledBack
  STEP       the steps taken of a rollout under way (1/3), - otherwise
  PARENTS    how many parents the rule serves
  READY      how many have the rule's Ready condition True for their generation
  SYNCED     how many have its Synced condition True for their generation
  FAILING    how many have its Synced condition False (an expression, an apply or a
             child's name failed; kubecel trace says why)

A rule without a status block writes no conditions: its READY, SYNCED and FAILING are -.

-o wide adds UP-TO-DATE (parents at the revision that runs for them: the current one,
or the one a rolled-back rule is held at), RESOURCE (the parent resource), FROM (the
revision a rollout rolls from, or is held at), AGE (of the current revision) and
MESSAGE (why a rollout paused or rolled back). -o json and -o yaml print the same as
data. NAME... lists only those rules.

A rule removed from the rules keeps its revisions (for kubecel rollout history and undo)
and is still listed. Exit status 0; 1 when a rule named has no revision, a revision's
proof does not verify, or the parents cannot be listed (the other rules are listed).`,
		Example: `  # every rule the installation runs
  kubecel get rules

  # one rule, with its revision's hash and the parents' reasons
  kubecel get rules webapp -o wide`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Output = output.Value
			return getrules.Run(cmd.Context(), &o, args, streamsOf(cmd))
		},
	}
	f := cmd.Flags()
	o.Cluster.AddFlags(f, "kubeconfig file (default: $KUBECONFIG, ~/.kube/config or in-cluster)")
	o.Identity.AddFlags(f)
	f.Lookup("identity-secret").Usage = "NAMESPACE/NAME of the installation's identity Secret: the revisions are in its namespace, and its key proves them (default: <installation>-identity in the pod's namespace in a cluster, kubecel-system outside one)"
	output.AddFlag(f, "text", "wide", "json", "yaml")
	cmd.ValidArgsFunction = ruleNames{cluster: o.Cluster, identity: &o.Identity}.complete(false)
	return cmd
}
