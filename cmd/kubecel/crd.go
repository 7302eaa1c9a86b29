package main

import (
	"github.com/spf13/cobra"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/crd"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
)

func newCRDCommand() *cobra.Command {
	var o crd.Options
	var output clikit.OutputFlag
	cmd := &cobra.Command{
		Use:   "crd --rules FILE|DIR... [--rule NAME] [-o yaml|json]",
		Short: "Print the CustomResourceDefinitions that the rules' api blocks define",
		Long: `crd loads the rules (as check does, offline) and prints the CustomResourceDefinition
that each rule with an api block defines: the one the controller applies before it
starts the rule, as multi-document YAML (one document per rule, under a comment naming
it), or with -o json as a v1 List. It is for those who apply CRDs themselves (GitOps):
the controller runs a rule whose CRD exists as the rules define it, and never changes a
CRD it did not create.

--rules may be given several times and may name a directory (its *.yaml files, sorted);
--rules - reads the rules from the standard input. --rule prints one rule's CRD. Exit
status 1 when the rules do not load, or no rule (or not the one named) has an api block.`,
		Example: `  kubecel crd --rules rules.yaml > crds.yaml
  kubectl apply --server-side -f crds.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Output = output.Value
			return crd.Run(&o, streamsOf(cmd))
		},
	}
	rulesfrom.AddRulesFlag(cmd.Flags(), &o.Rules)
	cmd.Flags().StringVar(&o.Rule, "rule", "", "print only this rule's CRD")
	output.AddFlag(cmd.Flags(), "yaml", "json")
	o.Limits.AddFlags(cmd.Flags())
	_ = cmd.MarkFlagRequired("rules")
	return cmd
}
