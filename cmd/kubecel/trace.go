package main

import (
	"github.com/spf13/cobra"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/trace"
)

func newTraceCommand() *cobra.Command {
	o := trace.Options{Cluster: clikit.NewClusterFlags()}
	var output clikit.OutputFlag
	cmd := &cobra.Command{
		Use:   "trace TYPE[/NAME] [--rules FILE|DIR... | --rules-configmap NS/NAME | --rules-configmap-selector NS/SELECTOR] [-n NAMESPACE] [-o text|wide|json|yaml|dot]",
		Short: "Show a live parent with its rules, children and refs, their readiness and reasons",
		Long: `trace answers "why is this parent not ready?". It reads the parent from the cluster,
finds the rules that serve its resource, and for each rule shows the rule's conditions
on the parent and beneath them every child and every ref:

  child   Kind/name (id): Ready, NotReady (the readyWhen that is false), Missing (not
          created yet), Waiting (for the children or refs it reads), Failed (the
          expression and its message), ChildExists (the name is taken by an object that
          is not this parent's child), NotProduced (pruned or released at the next
          reconcile); a child kept by its lifecycle says so
  ref     refs.id Kind/name: Found, Missing (what reads it waits), Absent (optional),
          Waiting (for the refs its name reads), Failed
  other   Released (a child the rule let go of: no longer kubecel's) and NotOurs (an
          object that carries this parent's labels but no proof that this installation
          made it: never counted as a child)

The rules are evaluated for the parent with its observed children and the refs as they
are now, as the controller would (read-only; nothing is written), so trace shows what
the next reconcile will see even before the controller has written the status.
A child counts only when its kubecel.dev/proof verifies under the installation's key
(--installation, --identity-secret, as for plan).

The rules are, by default, those the installation runs: each rule's current revision,
stored by the controller as a ControllerRevision in the identity Secret's namespace and
read only when its proof verifies under the installation's key. While a rule's rollout is
under way, a parent the rollout has not reached is traced at the revision it rolls from,
and a rule rolled back at the revision it is held at, as the controller runs them. The
first line says where the rules came from, and at which revision each rule is traced.
--rules (files, directories, - for stdin), --rules-configmap and
--rules-configmap-selector (read once, as run reads them) give the rules instead; with
several, they join in that order, as for run. The first line then names the ConfigMaps;
with --rules alone there is none.

TYPE is what kubectl takes: a kind (WebApp), a plural or short resource name (webapps),
or resource.group (webapps.example.kubecel.dev); TYPE/NAME or TYPE NAME names the
parent. -n is the parent's namespace (default: the kubeconfig's, else default). Without
NAME, trace prints a summary per rule: its parents by state (in every namespace unless
-n is given).

Output: a tree (text), -o wide adds the namespace, apiVersion and age columns, -o json
and -o yaml print the same as data, -o dot a Graphviz digraph (dot -Tsvg). Exit status
0 when the trace is printed, whatever the parent's state; 1 when the rules do not load
(a revision whose proof does not verify is refused) or the parent cannot be read.`,
		Example: `  # one parent: its rules, children and refs, with readiness and reasons
  kubecel trace webapps/shop -n team-a

  # every parent of a resource, in a namespace
  kubecel trace webapps -n team-a -o wide

  # a graph of one parent for Graphviz
  kubecel trace webapps/shop -n team-a -o dot > shop.dot`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Output = output.Value
			return trace.Run(cmd.Context(), &o, args, streamsOf(cmd))
		},
	}
	f := cmd.Flags()
	o.Rules.AddFlags(f)
	o.Cluster.AddFlags(f, "kubeconfig file (default: $KUBECONFIG, ~/.kube/config or in-cluster)")
	o.Identity.AddFlags(f)
	f.Lookup("identity-secret").Usage = "NAMESPACE/NAME of the installation's identity Secret, read (get) and never created: its key tells the installation's children and revisions from look-alikes (default: <installation>-identity in the pod's namespace in a cluster, kubecel-system outside one)"
	f.StringVarP(&o.Namespace, "namespace", "n", "", "the parent's namespace (default: the kubeconfig's namespace, else default); without NAME, only this namespace")
	output.AddFlag(f, "text", "wide", "json", "yaml", "dot")
	o.Limits.AddFlags(f)
	return cmd
}
