package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/cli/buildinfo"
	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
	"github.com/kubecel/kubecel/internal/cli/run/memory"
	"github.com/kubecel/kubecel/internal/crdschema"
	"github.com/kubecel/kubecel/internal/identity"
	"github.com/kubecel/kubecel/internal/rulesource"
	"github.com/kubecel/kubecel/internal/serve"
	"github.com/kubecel/kubecel/internal/shard"
	"github.com/kubecel/kubecel/rules"
)

// Options are run's flags.
type Options struct {
	// RulesFiles are the --rules files and directories (their *.yaml files), re-read
	// when they change; - reads the rules once from the standard input.
	RulesFiles []string
	// RulesConfigMap is NAMESPACE/NAME of a ConfigMap of rules (watched), when set.
	RulesConfigMap string
	// RulesSelector is NAMESPACE/SELECTOR of ConfigMaps of rules (watched), when set.
	RulesSelector string
	// Cluster connects to the cluster to run against.
	Cluster *clikit.ClusterFlags
	// DryRun writes nothing: the controller logs each change it would make.
	DryRun bool
	// Workers is how many parents are reconciled at once.
	Workers int
	// MaxWritesPerReconcile is how many child writes one reconcile sends before it hands
	// its worker to the next parent.
	MaxWritesPerReconcile int
	// FairnessKey is the namespace label that names a namespace's tenant, when set.
	FairnessKey string
	// QPS and Burst are the client-side rate limit of API requests.
	QPS   float32
	Burst int
	// MetricsAddr, HealthAddr and PprofAddr are where /metrics, /healthz and /readyz,
	// and /debug/pprof/ are served ("": not served).
	MetricsAddr, HealthAddr, PprofAddr string
	// Limits load the rules.
	Limits clikit.LoadLimits
	// Leader is leader election.
	Leader LeaderOptions
	// Sharding is active-active membership of a ring.
	Sharding ShardOptions
	// Identity names the installation and its identity Secret.
	Identity clikit.IdentityFlags
	// AdoptUnproven takes over children made by a kubecel before proofs.
	AdoptUnproven bool
	// NewIdentity makes a new key when the identity Secret is missing or holds another
	// key than the one the stored revisions were proven with.
	NewIdentity bool
	// RevisionsKept is how many revisions of each rule are kept in the cluster.
	RevisionsKept int
	// Build labels the kubecel_build_info metric.
	Build buildinfo.Info
	// Report, when set, receives the reload results and the rules that cannot run, as
	// text (kubecel dev prints them in its terminal).
	Report func(text string)
}

// Run runs the controller until ctx ends (nil then) or it fails: with leader election,
// while this process leads; with sharding, for its share of the parents. s.In is read
// for --rules -.
func Run(ctx context.Context, o *Options, s clikit.Streams) error {
	if o.RevisionsKept < 2 {
		return fmt.Errorf("--revision-history-limit must be at least 2 (a rollout needs the revision it rolls from), not %d", o.RevisionsKept)
	}
	if o.MaxWritesPerReconcile < 1 {
		return fmt.Errorf("--max-writes-per-reconcile must be at least 1, not %d", o.MaxWritesPerReconcile)
	}
	if o.Workers < 1 {
		return fmt.Errorf("--workers must be at least 1, not %d", o.Workers)
	}
	if o.DryRun && o.Sharding.Enabled {
		return errors.New("--dry-run and --sharding cannot be combined: a dry run writes nothing, and sharding writes membership Leases; run the dry run as a single replica")
	}
	ref, err := o.Identity.SecretRef()
	if err != nil {
		return err
	}
	if err := o.Leader.resolve(o.Sharding.Enabled, o.DryRun, ref); err != nil {
		return err
	}
	if err := o.Sharding.resolve(ref); err != nil {
		return err
	}
	if err := rulesfrom.CheckPaths(o.RulesFiles); err != nil {
		return err
	}
	cfg, err := o.Cluster.RESTConfig()
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	cfg.UserAgent = "kubecel"
	reg := prometheus.NewRegistry()
	if err := buildinfo.Register(reg, o.Build); err != nil {
		return err
	}
	// Before leader election and sharding fence the writes: replicas that start together
	// may each try to create the identity Secret, and all read the one that was made.
	mode := identity.Create
	switch {
	case o.DryRun:
		mode = identity.ReadOnly
	case o.NewIdentity:
		mode = identity.CreateNew
	}
	id, keyReplaced, err := o.Identity.LoadChecked(ctx, cfg, mode, true)
	if err != nil {
		return err
	}
	if keyReplaced {
		klog.FromContext(ctx).Info("The installation's key replaced an earlier one: children made with the earlier key are reported as IdentityMismatch on their parents", "secret", ref.String())
	}
	elected, err := newLeader(o.Leader, cfg, reg)
	if err != nil {
		return err
	}
	member, err := newMember(o.Sharding, cfg, reg)
	if err != nil {
		return err
	}
	sources, err := o.ruleSources(s.In, cfg)
	if err != nil {
		return err
	}
	var running atomic.Pointer[engine.Controller]
	g, ctx := errgroup.WithContext(ctx)
	if o.MetricsAddr != "" {
		g.Go(func() error { return serveErr("metrics", serve.Metrics(ctx, o.MetricsAddr, reg)) })
	}
	if o.HealthAddr != "" {
		g.Go(func() error {
			return serveErr("health", serve.Health(ctx, o.HealthAddr, readiness(elected, member, &running)))
		})
	}
	if o.PprofAddr != "" {
		g.Go(func() error { return serveErr("pprof", servePprof(ctx, o.PprofAddr)) })
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if member != nil {
		if err := refuseLeader(ctx, kube, ref.Installation, o.Leader); err != nil {
			return err
		}
	}
	g.Go(func() error {
		return elected.Run(ctx, func(ctx context.Context) error {
			if elected != nil {
				if err := refuseShardedPeers(ctx, kube, ref.Installation, o.Sharding); err != nil {
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

// installation is the identity the controller runs as.
type installation struct {
	id *rules.Identity
	// keyReplaced: the key replaced an earlier one (identity.CheckKey).
	keyReplaced bool
}

// control runs the controller until ctx ends; with leader election, while leading;
// with sharding, for the parents of the buckets the member serves, and then leaves the
// ring.
func (o *Options) control(ctx context.Context, cfg *rest.Config, reg *prometheus.Registry, inst installation, sources []rulesource.Source, member *shard.Member, running *atomic.Pointer[engine.Controller]) error {
	var ctrl *engine.Controller
	loader, err := o.newLoader(cfg, reg, sources, func(ctx context.Context, rs *rules.RuleSet) { ctrl.SetRules(ctx, rs) })
	if err != nil {
		return err
	}
	ref, err := o.Identity.SecretRef()
	if err != nil {
		return err
	}
	opts := engine.Options{Workers: o.Workers, MaxWritesPerReconcile: o.MaxWritesPerReconcile, FairnessKey: o.FairnessKey, DryRun: o.DryRun, Registry: reg, Identity: inst.id, KeyReplaced: inst.keyReplaced, AdoptUnproven: o.AdoptUnproven, Notify: rulesfrom.Notifier(loader, o.Report),
		RevisionNamespace: ref.Namespace, RevisionsKept: o.RevisionsKept}
	if member != nil {
		opts.Shard = member
	}
	ctrl, err = engine.New(cfg, opts)
	if err != nil {
		return err
	}
	running.Store(ctrl)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
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
	// The workers run while the first rules start: with many rules, the parents of
	// those that started first converge meanwhile.
	g.Go(func() error { return ctrl.Run(ctx) })
	if err := loader.Start(ctx); err != nil {
		cancel()
		_ = g.Wait()
		return err
	}
	g.Go(func() error { loader.Watch(ctx); return nil })
	g.Go(func() error {
		memory.Run(ctx, ctrl)
		return nil
	})
	return g.Wait()
}

// newLoader loads the rules of sources with the cluster's CRD schemas and hands each
// rule set that loads to apply. A dry run records no Events.
func (o *Options) newLoader(cfg *rest.Config, reg *prometheus.Registry, sources []rulesource.Source, apply func(context.Context, *rules.RuleSet)) (*rulesource.Loader, error) {
	crds, err := crdschema.NewReader(cfg)
	if err != nil {
		return nil, err
	}
	opts := rulesource.Options{
		Sources:  sources,
		Apply:    apply,
		Registry: reg,
		Report:   o.Report,
		LoadOptions: func(ctx context.Context) rules.Options {
			opts := o.Limits.Options()
			schemas, err := crds.Schemas(ctx)
			if err != nil {
				klog.FromContext(ctx).Error(err, "Cannot read CRD schemas; rules are checked without them")
				return opts
			}
			opts.Schemas = schemas
			return opts
		},
	}
	if !o.DryRun {
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
func (o *Options) ruleSources(stdin io.Reader, cfg *rest.Config) ([]rulesource.Source, error) {
	if len(o.RulesFiles) == 0 && o.RulesConfigMap == "" && o.RulesSelector == "" {
		return nil, errors.New("rules are required: give --rules FILE|DIR, --rules-configmap NAMESPACE/NAME or --rules-configmap-selector NAMESPACE/SELECTOR")
	}
	return rulesfrom.Sources(stdin, o.RulesFiles, o.RulesConfigMap, o.RulesSelector, cfg)
}
