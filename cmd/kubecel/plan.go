package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/plan"
)

func newPlanCommand() *cobra.Command {
	o := plan.Options{Cluster: clikit.NewClusterFlags()}
	var output clikit.OutputFlag
	cmd := &cobra.Command{
		Use:   "plan [--rules FILE|DIR... | --rules-configmap NS/NAME | --rules-configmap-selector NS/SELECTOR] [--kubeconfig FILE] [--rule NAME] [-n NAMESPACE] [-o text|json|yaml]",
		Short: "Show what the rules would change in the cluster, without changing it",
		Long: `plan reads the cluster, evaluates the rules (which may differ from the running ones)
for every matching parent and runs the controller's own reconcile once per parent, with
every write sent as a server-side dry run: each child is applied exactly as the
controller would apply it (field manager kubecel, force) with dryRun=All, and the
server's answer is compared with the live object. Nothing is written.

Output, grouped per parent in a stable order:
  + Kind namespace/name (child id)     would be created, with its fields
  ~ Kind namespace/name (child id)     would be updated, with the fields that change
  - Kind namespace/name (child id)     would be pruned
  - Kind namespace/name (child id) released   would be released (lifecycle Keep)
  ~ status of Kind namespace/name      the parent's status would change
  ! error                              the server rejects a child, an expression fails...
then a summary line; -o json or yaml prints every planned parent, changed or not, and the
summary as data. Metadata the server maintains (resourceVersion, managedFields,
uid, generation, timestamps) is left out; Secret data values are redacted. Colour is
used only on a terminal (and never with NO_COLOR set). Progress goes to stderr.

The cluster is the one kubectl would use (--kubeconfig, $KUBECONFIG, ~/.kube/config or
in-cluster, and kubectl's connection flags); -n does not default to the kubeconfig's
namespace. --rules may be given several times and may name a directory (its *.yaml
files), all loading as one rule set; --rules - reads the rules from the standard input.

Without --rules, --rules-configmap or --rules-configmap-selector, plan evaluates the
rules the installation runs: each rule's current revision, stored by the controller as
a ControllerRevision in the identity Secret's namespace and read only when its proof
verifies under the installation's key (a rule rolled back at the revision it is held
at). Such a plan shows what the controller has yet to do: nothing, once it has caught up.
--rules-configmap and --rules-configmap-selector read the ConfigMaps once, as run reads
them; given sources join in the order --rules, --rules-configmap,
--rules-configmap-selector, as for run. When the rules come from the cluster, the first
line of the text output says where from ("rules: ..."); -o json and yaml say it in
rulesFrom.

Exit status: 0 nothing would change, 2 something would change, 1 an error (the rules do
not load, the cluster cannot be read, or any parent could not be fully planned: the plan
of every other parent is still printed). An error wins over changes, as with
terraform plan -detailed-exitcode.`,
		Example: `  # what an edited rules file would change in the cluster (exit 2: changes)
  kubecel plan --rules rules.yaml

  # one rule, in one namespace, as JSON
  kubecel plan --rules rules.yaml --rule webapp -n team-a -o json

  # the rules the installation runs, against the cluster as it is
  kubecel plan`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Output = output.Value
			return plan.Run(cmd.Context(), &o, streamsOf(cmd))
		},
	}
	f := cmd.Flags()
	o.Rules.AddFlags(f)
	o.Cluster.AddFlags(f, "kubeconfig file (default: $KUBECONFIG, ~/.kube/config or in-cluster)")
	o.Identity.AddFlags(f)
	f.Lookup("identity-secret").Usage = "NAMESPACE/NAME of the installation's identity Secret, read (get) and never created: its key tells the installation's children and revisions from look-alikes (default: <installation>-identity in the pod's namespace in a cluster, kubecel-system outside one)"
	f.StringVar(&o.Rule, "rule", "", "plan only this rule")
	f.StringVarP(&o.Namespace, "namespace", "n", "", "plan only the parents in this namespace")
	output.AddFlag(f, "text", "json", "yaml")
	f.DurationVar(&o.SyncTimeout, "sync-timeout", 2*time.Minute, "how long to wait for the cluster's objects to be listed")
	o.Limits.AddFlags(f)
	_ = cmd.RegisterFlagCompletionFunc("rule", ruleNames{files: &o.Rules.Files, cluster: o.Cluster, identity: &o.Identity}.complete(false))
	return cmd
}
