package main

import (
	"github.com/spf13/cobra"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/rbac"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
)

func newRBACCommand() *cobra.Command {
	var output clikit.OutputFlag
	o := rbac.Options{Name: "kubecel-rules", ServiceAccount: "kubecel-system/kubecel", Cluster: clikit.NewClusterFlags()}
	cmd := &cobra.Command{
		Use:   "rbac --rules FILE|DIR... [-o yaml|json]",
		Short: "Print the least-privilege ClusterRole that the rules need",
		Long: `rbac prints, as YAML (or JSON with -o json), the ClusterRole that the rules need and nothing more:
get, list, watch and patch on each parent resource (patch adds and removes the
cleanup.kubecel.dev/<rule> finalizer), patch on its status subresource when the rule writes
status, and get, list, watch, create, patch and delete on each child resource (every
write is a server-side apply; delete prunes).

The role is labelled kubecel.dev/aggregate-to-controller: "true", so the controller's
aggregated ClusterRole from deploy/ picks it up; the controller's own needs (its rules
ConfigMap, Events, Leases, reading CRDs) are in the fixed base role there.

Child kinds are mapped to resources with the CRDs from --crds, then with the discovery
of the cluster from --kubeconfig ($KUBECONFIG, ~/.kube/config or in-cluster), and are
otherwise guessed from the kind's name, with a note on stderr. Kinds are guessed only
when there is no kubeconfig at all: a cluster that is configured but cannot be read
(unreachable, refused credentials) is an error, wherever its kubeconfig comes from.

--rules may be given several times and may name a directory (its *.yaml files), all
loading as one rule set; --rules - reads the rules from the standard input.

Refs are read with list and watch. Where a rule confines a ref to named namespaces (a
literal namespace, or the rule's parent.namespaces), those reads are not in the
ClusterRole: each such namespace gets a Role of that name with them and a RoleBinding
of it to the controller's ServiceAccount (--serviceaccount), printed after the
ClusterRole (-o json prints a List then).`,
		Example: `  kubecel rbac --rules rules.yaml > rules-rbac.yaml
  kubectl apply -f rules-rbac.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Output = output.Value
			return rbac.Run(&o, streamsOf(cmd))
		},
	}
	rulesfrom.AddRulesFlag(cmd.Flags(), &o.Rules)
	o.Cluster.AddFlags(cmd.Flags(), "kubeconfig of the cluster whose discovery maps kinds to resources (default $KUBECONFIG, ~/.kube/config or in-cluster; without one, resource names are guessed)")
	cmd.Flags().StringVar(&o.Name, "name", o.Name, "name of the ClusterRole (and of the Roles for refs confined to namespaces)")
	cmd.Flags().StringVar(&o.ServiceAccount, "serviceaccount", o.ServiceAccount, "NAMESPACE/NAME of the controller's ServiceAccount, which the RoleBindings for refs confined to namespaces bind")
	cmd.Flags().StringVar(&o.CRDs, "crds", "", "directory of CustomResourceDefinition manifests that map the kinds they define to their resources")
	o.Limits.AddFlags(cmd.Flags())
	output.AddFlag(cmd.Flags(), "yaml", "json")
	_ = cmd.MarkFlagRequired("rules")
	return cmd
}
