package main

import (
	"github.com/spf13/cobra"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/run"
	"github.com/kubecel/kubecel/internal/rollout"
)

func newRunCommand() *cobra.Command {
	o := run.Options{Cluster: clikit.NewClusterFlags()}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the controller",
		Long: `run watches the parents named by the rules and keeps their children and status as
the rules compute them. The rules come from --rules files and directories (their *.yaml
files), --rules-configmap and --rules-configmap-selector, which may be combined and all
join one rule set. Each is re-read when it changes; a file or ConfigMap whose new version
fails to load is reported (with a Warning Event on a ConfigMap) and keeps its last good
version while the others reload; --rules - reads the rules once from the standard input,
without reload. Every process of one installation (--installation, --identity-secret)
meets at the installation's leader election Lease: only the one that holds it runs the
controller, any other stands by and says which process leads, and one that loses the
Lease stops and exits non-zero. With --sharding, every replica runs the controller for its
share of the parents: each holds a membership Lease, and the parents are spread over the
live members. A process of one mode refuses to start while the installation runs in the
other. --dry-run writes nothing and takes no Lease.`,
		Example: `  # the rules of a file, against the cluster of your kubeconfig
  kubecel run --rules rules.yaml

  # log each change instead of making it
  kubecel run --rules rules.yaml --dry-run

  # in a cluster: the rules of a ConfigMap, one active replica at a time
  kubecel run --rules-configmap kubecel-system/kubecel-rules --leader-elect`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Leader.Explicit = cmd.Flags().Changed("leader-elect")
			o.Build = readBuildInfo()
			return run.Run(cmd.Context(), &o, streamsOf(cmd))
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.RulesFiles, "rules", nil, "rules file, or directory (its *.yaml files, sorted), re-read when it changes; - reads the rules once from the standard input; repeatable")
	f.StringVar(&o.RulesConfigMap, "rules-configmap", "", "NAMESPACE/NAME of a ConfigMap whose keys ending in .yaml hold rules (watched)")
	f.StringVar(&o.RulesSelector, "rules-configmap-selector", "", "NAMESPACE/SELECTOR: every ConfigMap of NAMESPACE whose labels match SELECTOR holds rules in its keys ending in .yaml (watched)")
	o.Cluster.AddFlags(f, "kubeconfig file (default: $KUBECONFIG, ~/.kube/config or in-cluster)")
	f.BoolVar(&o.DryRun, "dry-run", false, "never write: log each change the controller would make")
	f.IntVar(&o.Workers, "workers", 16, "parallel reconciles")
	f.IntVar(&o.RevisionsKept, "revision-history-limit", rollout.DefaultKeep, "revisions of each rule kept in the cluster (ControllerRevisions in the identity Secret's namespace), for kubecel rollout history and undo")
	f.IntVar(&o.MaxWritesPerReconcile, "max-writes-per-reconcile", engine.DefaultMaxWritesPerReconcile, "child writes (applies and deletes) one reconcile sends before it hands its worker to the next parent and continues on a later turn")
	f.StringVar(&o.FairnessKey, "fairness-key", "", "namespace label that names the tenant owning a namespace: the workers are shared fairly between tenants (every namespace with the same value is one), not between namespaces; needs list and watch on namespaces")
	f.Float32Var(&o.QPS, "qps", 1000, "client-side rate limit on API requests per second")
	f.IntVar(&o.Burst, "burst", 2000, "client-side burst of API requests")
	f.StringVar(&o.MetricsAddr, "metrics-addr", ":8080", "address of /metrics (empty disables)")
	f.StringVar(&o.HealthAddr, "health-addr", ":8081", "address of /healthz and /readyz (empty disables)")
	f.StringVar(&o.PprofAddr, "pprof-addr", "", "address of net/http/pprof under /debug/pprof/ (empty disables)")
	o.Limits.AddFlags(f)
	f.BoolVar(&o.Leader.Enabled, "leader-elect", true, "run the controller only while holding the installation's Lease, so that one process of an installation writes and any other stands by (default on; off with --sharding or --dry-run)")
	f.StringVar(&o.Leader.Options.Namespace, "leader-elect-namespace", "", "namespace of the Lease (default: the identity Secret's namespace)")
	f.StringVar(&o.Leader.Options.ID, "leader-elect-id", "", "name of the Lease (default: the installation's name)")
	o.Leader.Options.Timing.AddFlags(f, "leader-elect")
	f.BoolVar(&o.Sharding.Enabled, "sharding", false, "run active-active: the parents are spread over every replica that holds a membership Lease in the ring (not with --leader-elect)")
	f.StringVar(&o.Sharding.Options.Ring, "sharding-ring", "", "name of the ring: the label kubecel.dev/ring on its members' Leases (default: the installation's name)")
	f.StringVar(&o.Sharding.Options.Namespace, "sharding-namespace", "", "namespace of the membership Leases (default: the identity Secret's namespace)")
	o.Sharding.Options.Timing.AddFlags(f, "sharding")
	o.Identity.AddFlags(f)
	f.BoolVar(&o.NewIdentity, "new-identity", false, "make a new key when the installation's identity Secret is missing or holds another key than the one its stored revisions were proven with (a lost key): every child made with the earlier key becomes a stranger to it; restore the Secret from a backup instead where you can")
	f.BoolVar(&o.AdoptUnproven, "adopt-unproven", false, "take over children made by a kubecel before proofs (this rule's and parent's labels, no installation label); for an upgrade only")
	return cmd
}
