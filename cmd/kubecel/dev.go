package main

import (
	"strconv"

	"github.com/spf13/cobra"

	"github.com/kubecel/kubecel/internal/cli/dev"
	"github.com/kubecel/kubecel/internal/controlplane"
)

func newDevCommand() *cobra.Command {
	var o dev.Options
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local control plane with the examples and the controller until Ctrl-C",
		Long: `dev starts a local Kubernetes control plane from the binaries built by
'make controlplane', installs the examples' CRDs, writes the rules of every example to
DIR/rules.yaml, runs the controller on that file (edits reload, as with 'kubecel run
--rules'), applies the examples' sample parents and prints the kubeconfig and what to
try. Each reload of the rules file prints its result in the terminal: the rules loaded
(and their warnings), or the errors of a broken edit, while the last good rules keep
running; so does a rule that cannot run (a kind not served). The controller's full log
is DIR/kubecel.log. With --no-examples, nothing is installed and the rules file is
empty: a start for your own CRD and rules. Ctrl-C stops every process.

The control plane runs what a cluster runs: etcd, kube-apiserver, kube-controller-manager
with a cluster's controllers (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs,
CronJobs, EndpointSlices, ServiceAccounts, ClusterRole aggregation, quotas, volume
binding, garbage collection, namespaces) and kube-scheduler. Only the nodes are
simulated: KWOK plays the kubelets of three nodes, so Pods are scheduled, run and turn
Ready at once, Deployments become Available, Jobs complete and volume claims are bound;
no container runs. A container image whose tag contains "broken" (app:1.2-broken)
never pulls: its Pod stays Pending in ImagePullBackOff, to show a bad rollout. With
--minimal, only etcd, kube-apiserver and kube-controller-manager's garbage collector
and namespace controllers run: no Pod is ever created, and nothing becomes ready by
itself.`,
		Example: `  # the examples on a local control plane, with the controller; Ctrl-C stops all
  kubecel dev

  # your own CRDs, rules and parents, without the examples
  kubecel dev --no-examples --crds crds/ --rules rules.yaml -f parents.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The controller logs to DIR/kubecel.log at the command's -v level.
			if v := cmd.Flag("v"); v != nil {
				o.Verbosity, _ = strconv.Atoi(v.Value.String())
			}
			o.Build = readBuildInfo()
			return dev.Run(cmd.Context(), &o, streamsOf(cmd))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "dir", "", "state directory (replaced at start and kept at exit); default a temporary directory removed at exit")
	f.StringVar(&o.BinDir, "bin-dir", "", "directory with etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (default: $"+controlplane.BinDirEnv+", next to kubecel, or ./bin)")
	f.BoolVar(&o.Minimal, "minimal", false, "run no scheduler, no nodes and only the garbage collector and namespace controllers: Deployments and StatefulSets get no Pods (needs no kube-scheduler or kwok)")
	f.BoolVar(&o.NoExamples, "no-examples", false, "install no examples: no CRDs, no sample parents, and an empty rules file to edit (or the rules of --rules)")
	f.StringVar(&o.CRDs, "crds", "", "directory of your own CustomResourceDefinition manifests to install at start, besides the examples' (or instead, with --no-examples)")
	f.StringVar(&o.Rules, "rules", "", "a rules file of your own, written to DIR/rules.yaml after the examples' rules (or alone, with --no-examples)")
	f.StringArrayVarP(&o.Objects, "filename", "f", nil, "a file of objects (your parents, what they read) to apply once the controller runs; repeatable")
	f.StringVar(&o.MetricsAddr, "metrics-addr", "", "address of the controller's /metrics (default: a free port on 127.0.0.1)")
	f.StringVar(&o.HealthAddr, "health-addr", "", "address of the controller's /healthz and /readyz (default: a free port on 127.0.0.1)")
	return cmd
}
