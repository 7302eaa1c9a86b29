package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
	"github.com/kubecel/kubecel/internal/crdschema"
	"github.com/kubecel/kubecel/internal/identity"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/internal/rulesource"
	"github.com/kubecel/kubecel/internal/serve"
	"github.com/kubecel/kubecel/internal/shard"
	"github.com/kubecel/kubecel/rules"
)

type runOptions struct {
	rulesFiles     []string
	rulesConfigMap string
	rulesSelector  string
	stdin          io.Reader // for --rules -
	cluster        *clikit.ClusterFlags
	dryRun         bool
	workers        int
	batch          int
	fairnessKey    string
	qps            float32
	burst          int
	metricsAddr    string
	healthAddr     string
	pprofAddr      string
	limits         clikit.LoadLimits
	leader         leaderOptions
	sharding       shardOptions
	identity       clikit.IdentityFlags
	adoptUnproven  bool
	newIdentity    bool
	revisionsKept  int
	// report, when set, receives the reload results and the rules that cannot run, as
	// text (kubecel dev prints them in its terminal).
	report func(text string)
}

func newRunCommand() *cobra.Command {
	o := runOptions{cluster: clikit.NewClusterFlags()}
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
			o.stdin = cmd.InOrStdin()
			o.leader.explicit = cmd.Flags().Changed("leader-elect")
			return o.run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.rulesFiles, "rules", nil, "rules file, or directory (its *.yaml files, sorted), re-read when it changes; - reads the rules once from the standard input; repeatable")
	f.StringVar(&o.rulesConfigMap, "rules-configmap", "", "NAMESPACE/NAME of a ConfigMap whose keys ending in .yaml hold rules (watched)")
	f.StringVar(&o.rulesSelector, "rules-configmap-selector", "", "NAMESPACE/SELECTOR: every ConfigMap of NAMESPACE whose labels match SELECTOR holds rules in its keys ending in .yaml (watched)")
	o.cluster.AddFlags(f, "kubeconfig file (default: $KUBECONFIG, ~/.kube/config or in-cluster)")
	f.BoolVar(&o.dryRun, "dry-run", false, "never write: log each change the controller would make")
	f.IntVar(&o.workers, "workers", 16, "parallel reconciles")
	f.IntVar(&o.revisionsKept, "revision-history-limit", rollout.DefaultKeep, "revisions of each rule kept in the cluster (ControllerRevisions in the identity Secret's namespace), for kubecel rollout history and undo")
	f.IntVar(&o.batch, "max-writes-per-reconcile", engine.DefaultMaxWritesPerReconcile, "child writes (applies and deletes) one reconcile sends before it hands its worker to the next parent and continues on a later turn")
	f.StringVar(&o.fairnessKey, "fairness-key", "", "namespace label that names the tenant owning a namespace: the workers are shared fairly between tenants (every namespace with the same value is one), not between namespaces; needs list and watch on namespaces")
	f.Float32Var(&o.qps, "qps", 1000, "client-side rate limit on API requests per second")
	f.IntVar(&o.burst, "burst", 2000, "client-side burst of API requests")
	f.StringVar(&o.metricsAddr, "metrics-addr", ":8080", "address of /metrics (empty disables)")
	f.StringVar(&o.healthAddr, "health-addr", ":8081", "address of /healthz and /readyz (empty disables)")
	f.StringVar(&o.pprofAddr, "pprof-addr", "", "address of net/http/pprof under /debug/pprof/ (empty disables)")
	o.limits.AddFlags(f)
	o.leader.addFlags(f)
	o.sharding.addFlags(f)
	o.identity.AddFlags(f)
	f.BoolVar(&o.newIdentity, "new-identity", false, "make a new key when the installation's identity Secret is missing or holds another key than the one its stored revisions were proven with (a lost key): every child made with the earlier key becomes a stranger to it; restore the Secret from a backup instead where you can")
	f.BoolVar(&o.adoptUnproven, "adopt-unproven", false, "take over children made by a kubecel before proofs (this rule's and parent's labels, no installation label); for an upgrade only")
	return cmd
}

func (o *runOptions) run(ctx context.Context) error {
	if o.revisionsKept < 2 {
		return fmt.Errorf("--revision-history-limit must be at least 2 (a rollout needs the revision it rolls from), not %d", o.revisionsKept)
	}
	if o.batch < 1 {
		return fmt.Errorf("--max-writes-per-reconcile must be at least 1, not %d", o.batch)
	}
	if o.workers < 1 {
		return fmt.Errorf("--workers must be at least 1, not %d", o.workers)
	}
	if o.dryRun && o.sharding.enabled {
		return errors.New("--dry-run and --sharding cannot be combined: a dry run writes nothing, and sharding writes membership Leases; run the dry run as a single replica")
	}
	ref, err := o.identity.SecretRef()
	if err != nil {
		return err
	}
	if err := o.leader.resolve(o.sharding.enabled, o.dryRun, ref); err != nil {
		return err
	}
	if err := o.sharding.resolve(ref); err != nil {
		return err
	}
	if err := rulesfrom.CheckPaths(o.rulesFiles); err != nil {
		return err
	}
	cfg, err := o.cluster.RESTConfig()
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = o.qps, o.burst
	cfg.UserAgent = "kubecel"
	reg := prometheus.NewRegistry()
	if err := registerBuildInfo(reg); err != nil {
		return err
	}
	// Before leader election and sharding fence the writes: replicas that start together
	// may each try to create the identity Secret, and all read the one that was made.
	mode := identity.Create
	switch {
	case o.dryRun:
		mode = identity.ReadOnly
	case o.newIdentity:
		mode = identity.CreateNew
	}
	id, keyReplaced, err := o.identity.LoadChecked(ctx, cfg, mode, true)
	if err != nil {
		return err
	}
	if keyReplaced {
		klog.FromContext(ctx).Info("The installation's key replaced an earlier one: children made with the earlier key are reported as IdentityMismatch on their parents", "secret", ref.String())
	}
	elected, err := newLeader(o.leader, cfg, reg)
	if err != nil {
		return err
	}
	member, err := newMember(o.sharding, cfg, reg)
	if err != nil {
		return err
	}
	sources, err := o.ruleSources(cfg)
	if err != nil {
		return err
	}
	var running atomic.Pointer[engine.Controller]
	g, ctx := errgroup.WithContext(ctx)
	if o.metricsAddr != "" {
		g.Go(func() error { return serveErr("metrics", serve.Metrics(ctx, o.metricsAddr, reg)) })
	}
	if o.healthAddr != "" {
		g.Go(func() error {
			return serveErr("health", serve.Health(ctx, o.healthAddr, readiness(elected, member, &running)))
		})
	}
	if o.pprofAddr != "" {
		g.Go(func() error { return serveErr("pprof", servePprof(ctx, o.pprofAddr)) })
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if member != nil {
		if err := refuseLeader(ctx, kube, ref.Installation, o.leader); err != nil {
			return err
		}
	}
	g.Go(func() error {
		return elected.Run(ctx, func(ctx context.Context) error {
			if elected != nil {
				if err := refuseShardedPeers(ctx, kube, ref.Installation, o.sharding); err != nil {
					return err
				}
			}
			return o.control(ctx, cfg, reg, installation{id: id, keyReplaced: keyReplaced}, sources, member, &running)
		})
	})
	err = g.Wait()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// control runs the controller until ctx ends; with leader election, while leading;
// with sharding, for the parents of the buckets the member serves, and then leaves the
// ring.
// installation is the identity the controller runs as.
type installation struct {
	id *rules.Identity
	// keyReplaced: the key replaced an earlier one (identity.CheckKey).
	keyReplaced bool
}

func (o *runOptions) control(ctx context.Context, cfg *rest.Config, reg *prometheus.Registry, inst installation, sources []rulesource.Source, member *shard.Member, running *atomic.Pointer[engine.Controller]) error {
	var ctrl *engine.Controller
	loader, err := o.newLoader(cfg, reg, sources, func(ctx context.Context, rs *rules.RuleSet) { ctrl.SetRules(ctx, rs) })
	if err != nil {
		return err
	}
	ref, err := o.identity.SecretRef()
	if err != nil {
		return err
	}
	opts := engine.Options{Workers: o.workers, MaxWritesPerReconcile: o.batch, FairnessKey: o.fairnessKey, DryRun: o.dryRun, Registry: reg, Identity: inst.id, KeyReplaced: inst.keyReplaced, AdoptUnproven: o.adoptUnproven, Notify: rulesfrom.Notifier(loader, o.report),
		RevisionNamespace: ref.Namespace, RevisionsKept: o.revisionsKept}
	if member != nil {
		opts.Shard = member
	}
	ctrl, err = engine.New(cfg, opts)
	if err != nil {
		return err
	}
	running.Store(ctrl)
	g, ctx := errgroup.WithContext(ctx)
	if member != nil {
		// The rules start once the member holds its Lease: before, its writes (the
		// access check's reviews too) are fenced.
		defer leave(ctx, member)
		g.Go(func() error { return member.Run(ctx, ctrl) })
		select {
		case <-member.Joined():
		case <-ctx.Done():
			return g.Wait()
		}
	}
	if err := loader.Start(ctx); err != nil {
		return err
	}
	g.Go(func() error { loader.Watch(ctx); return nil })
	g.Go(func() error { return ctrl.Run(ctx) })
	g.Go(func() error {
		memoryLoop(ctx, ctrl, goRuntime{}, time.Second, 5*time.Second)
		return nil
	})
	return g.Wait()
}

// newLoader loads the rules of sources with the cluster's CRD schemas and hands each
// rule set that loads to apply. A dry run records no Events.
func (o *runOptions) newLoader(cfg *rest.Config, reg *prometheus.Registry, sources []rulesource.Source, apply func(context.Context, *rules.RuleSet)) (*rulesource.Loader, error) {
	crds, err := crdschema.NewReader(cfg)
	if err != nil {
		return nil, err
	}
	opts := rulesource.Options{
		Sources:  sources,
		Apply:    apply,
		Registry: reg,
		Report:   o.report,
		LoadOptions: func(ctx context.Context) rules.Options {
			opts := o.limits.Options()
			schemas, err := crds.Schemas(ctx)
			if err != nil {
				klog.FromContext(ctx).Error(err, "Cannot read CRD schemas; rules are checked without them")
				return opts
			}
			opts.Schemas = schemas
			return opts
		},
	}
	if !o.dryRun {
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		opts.Events = kube
	}
	return rulesource.New(opts)
}

func serveErr(what string, err error) error {
	if err != nil {
		return fmt.Errorf("%s server: %w", what, err)
	}
	return nil
}

// ruleSources picks the rule sources of run, in the order their rules join: the
// --rules files and directories, then --rules-configmap, then
// --rules-configmap-selector. cfg is used only for the ConfigMap forms.
func (o *runOptions) ruleSources(cfg *rest.Config) ([]rulesource.Source, error) {
	if len(o.rulesFiles) == 0 && o.rulesConfigMap == "" && o.rulesSelector == "" {
		return nil, errors.New("rules are required: give --rules FILE|DIR, --rules-configmap NAMESPACE/NAME or --rules-configmap-selector NAMESPACE/SELECTOR")
	}
	return rulesfrom.Sources(o.stdin, o.rulesFiles, o.rulesConfigMap, o.rulesSelector, cfg)
}
