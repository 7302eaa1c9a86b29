package main

import (
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubecel/kubecel/internal/cli/check"
	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
)

func newCheckCommand() *cobra.Command {
	var output clikit.OutputFlag
	o := check.Options{Cluster: clikit.NewClusterFlags()}
	cmd := &cobra.Command{
		Use:   "check --rules FILE|DIR... [--crds DIR | --kubeconfig FILE [--context NAME]] [-o text|json|yaml]",
		Short: "Validate and type-check rules files",
		Long: `check loads a rules file the way the controller does: strict YAML, names, resources
and selectors, CEL syntax and types, references between children and their cycles, and
the estimated cost of every expression. Parents and children of built-in kinds
(Deployment, Service, ConfigMap, Namespace, ...) are type-checked against the schemas
embedded in kubecel; with --crds, custom resources are too, against the schemas of the
CRDs in DIR, or with --kubeconfig (or --context, or any of kubectl's connection flags)
against the CRDs the cluster serves (parent.spec.replicsa is an error; port: "80" or a
string expression where a child's schema wants an integer is too). Against a cluster, a
parent, child or ref whose kind the cluster does not serve is an error too (a CRD not
installed, ConfigMap under apps/v1, a version the CRD does not serve), although the
controller would run the other rules and start that one once its kinds are served. A
notice names every parent and child that was not type-checked, and how to get its
schema.

It prints a one-line summary and exits 0, or lists every problem with its line, rule,
child, field and expression and exits 1. It also warns (without failing) about children
of sensitive kinds: Secrets, RBAC objects, admission webhooks and policies, and CRDs,
which give whoever writes a parent power over the cluster through the controller; and
about unquoted y, yes, on, n, no and off (YAML 1.1 booleans) as map keys anywhere and as
values in templates, where a string was almost surely meant.

--rules may be given several times and may name a directory (its *.yaml files, sorted);
every YAML document of every file loads into one rule set, as the controller loads them,
so a rule name used twice is an error naming both places. --rules - reads the rules
from the standard input. -o json (or yaml) prints, instead of
text, a list of diagnostics for machines (editors, CI annotations): one object per
error, warning or notice with file, line and column (the 1-based position in the file:
where in the expression the problem is when CEL says, else the field's line and column
0; 0 when unknown), rule, child, field, expression, message and severity
("error", "warning" or "notice"). The exit status is the same: 1 when the rules do not load.`,
		Example: `  # every error of a rules file, offline, with the CRDs of a directory
  kubecel check --rules rules.yaml --crds crds/

  # against the resources and CRDs of a cluster (read only)
  kubecel check --rules rules/ --kubeconfig ~/.kube/config

  # positions in the file, for editors and CI annotations
  kubecel check --rules rules.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Output = output.Value
			o.FromCluster = choosesCluster(cmd.Flags())
			return check.Run(cmd.Context(), &o, streamsOf(cmd))
		},
	}
	rulesfrom.AddRulesFlag(cmd.Flags(), &o.Rules)
	cmd.Flags().StringVar(&o.CRDs, "crds", "", "directory of CustomResourceDefinition manifests to type-check against")
	o.Cluster.AddFlags(cmd.Flags(), "kubeconfig of a cluster whose CRDs and served kinds to check against (instead of --crds)")
	for _, name := range clusterChoosingFlags {
		cmd.MarkFlagsMutuallyExclusive("crds", name)
	}
	output.AddFlag(cmd.Flags(), "text", "json", "yaml")
	o.Limits.AddFlags(cmd.Flags())
	_ = cmd.MarkFlagRequired("rules")
	return cmd
}

// clusterChoosingFlags are the connection flags that make check read a cluster.
var clusterChoosingFlags = []string{"kubeconfig", "context", "cluster", "server"}

// choosesCluster reports whether check was given a cluster to check against.
func choosesCluster(fs *pflag.FlagSet) bool {
	return slices.ContainsFunc(clusterChoosingFlags, fs.Changed)
}
