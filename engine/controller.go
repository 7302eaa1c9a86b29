package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/apis"
	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/engine/internal/metrics"
	"github.com/kubecel/kubecel/engine/internal/reconcile"
	"github.com/kubecel/kubecel/engine/internal/rollouts"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/internal/dynclient"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/rules"
)

// DefaultMaxWritesPerReconcile is Options.MaxWritesPerReconcile's default.
const DefaultMaxWritesPerReconcile = 50

// Options configures a Controller. The zero value is usable.
type Options struct {
	// Workers is the number of parallel reconciles (default 4).
	Workers int
	// Resync is the informers' periodic resync (default 10 minutes; 0 keeps the default).
	Resync time.Duration
	// DryRun makes the controller compute and log every change without writing anything.
	DryRun bool
	// Registry receives the kubecel_* and workqueue metrics (default: a new registry).
	Registry *prometheus.Registry
	// PendingRetry is how often rules whose parent or child kinds are not served yet are
	// retried (default 5s).
	PendingRetry time.Duration
	// SkipAccessCheck starts rules without first checking, with SelfSubjectAccessReviews,
	// that the controller has every permission they need.
	SkipAccessCheck bool
	// Shard, when set, restricts the controller to the parents of the buckets it
	// serves (kubecel run --sharding); nil serves every parent.
	Shard Shard
	// Identity is the installation the controller acts for (required): it proves the
	// children it creates, and takes for children only the objects that carry its proof
	// (rules.Identity). Replicas of one installation share it.
	Identity *rules.Identity
	// AdoptUnproven takes over, as the rule's child of a parent, an object that carries
	// the rule's and the parent's labels but no installation label: a child made by a
	// kubecel before proofs (kubecel run --adopt-unproven, for an upgrade).
	AdoptUnproven bool
	// KeyReplaced says that the installation's key is not the one it made its first
	// objects with (its stored revisions show an earlier key: a lost identity Secret,
	// and kubecel run --new-identity). A child that carries this installation's labels
	// for a parent and rule but no proof under the key is then taken for one made with
	// the earlier key, and the parent reports IdentityMismatch in its conditions; without
	// it, such a child is another installation's of the same name, and the parent's
	// status is left to that installation.
	KeyReplaced bool
	// MaxWritesPerReconcile is the most child writes (applies and deletes) one reconcile
	// sends before it yields its worker: the parent goes to the back of its flow in the
	// queue and continues on its next turn, so a parent with many children shares the
	// workers with every other parent (default 50). A dry run has no limit.
	MaxWritesPerReconcile int
	// RevisionNamespace is the namespace where the rules' revisions are kept, as
	// ControllerRevisions (kubecel's own); "" keeps none, and a rule with a rollout
	// policy then cannot run, except in a dry run, where every parent is planned at the
	// rules' revision (kubecel plan).
	RevisionNamespace string
	// RevisionsKept is how many revisions of each rule are kept (default 10).
	RevisionsKept int
	// FairnessKey, when set, is a namespace label that names the tenant owning a
	// namespace: the fair queue keeps the parents of every namespace with the same value
	// in one flow, so that a tenant gets one share of the workers however many namespaces
	// it spreads its parents over (see flowName). The controller then lists and watches
	// namespaces (their metadata, those with the label).
	FairnessKey string
	// Notify, when set, is told once when a rule cannot run (reason contract.PendingNotServed,
	// contract.PendingForbidden or contract.PendingError) with a message naming what is missing.
	Notify func(ctx context.Context, rule, reason, message string)

	// holdFirstRevisions (tests: HoldFirstRevisions) keeps the rollouts from storing the
	// rules' first revisions: the controller is never idle to them, for an hour.
	holdFirstRevisions bool
}

func (o *Options) defaults() {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Resync <= 0 {
		o.Resync = 10 * time.Minute
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if o.PendingRetry <= 0 {
		o.PendingRetry = 5 * time.Second
	}
	if o.RevisionsKept <= 0 {
		o.RevisionsKept = rollout.DefaultKeep
	}
	if o.MaxWritesPerReconcile <= 0 {
		o.MaxWritesPerReconcile = DefaultMaxWritesPerReconcile
	}
}

// Controller runs rules against a cluster: the loop. Its workers take parents' keys
// from a fair queue and hand each to the reconciler with the running rule it is under;
// its rule lifecycle starts, replaces and stops rules and their watches.
type Controller struct {
	opts       Options
	kube       kubernetes.Interface
	meta       metadata.Interface
	watcher    *watch.Watcher
	reconciler *reconcile.Reconciler
	queue      workqueue.TypedRateLimitingInterface[queueKey]
	fair       *fairQueue // the order of queue's waiting keys
	events     record.EventBroadcaster
	metrics    *metrics.Metrics

	// view is the running and the waiting rules, as the lifecycle last published them;
	// life is the rule lifecycle, which changes them.
	view atomic.Pointer[ruleView]
	life *lifecycle

	// pause is held for reading by every reconcile and for writing while WatchBuckets
	// swaps informers; moved tracks the parents a replica gained in a ring change
	// (shard.go).
	pause sync.RWMutex
	moved movedParents

	// tenants reads the fairness key label of namespaces (nil without Options.FairnessKey).
	tenants *tenants

	busy       atomic.Int64  // reconciles in progress
	reconciles atomic.Uint64 // reconciles started

	// revInformers cache the rules' revisions (nil without Options.RevisionNamespace).
	revInformers kubeinformers.SharedInformerFactory

	// testHook, set only by tests, is called at the start of every reconcile.
	testHook func(queueKey)
}

// queueKey identifies one parent under one rule: the unit of work of the queue.
type queueKey = watch.Key

// New builds a controller for the cluster that cfg points at.
func New(cfg *rest.Config, opts Options) (*Controller, error) {
	opts.defaults()
	if opts.Identity == nil {
		return nil, errors.New("engine: Options.Identity is required: the controller proves its children with it")
	}
	prove := func(u *unstructured.Unstructured) bool { return opts.Identity.ProvesObject(u) }
	client, err := dynclient.New(cfg)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	metaClient, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	m, err := metrics.New(opts.Registry)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		opts:    opts,
		kube:    kube,
		meta:    metaClient,
		fair:    newFairQueue(),
		metrics: m,
	}
	c.view.Store(emptyView)
	if opts.FairnessKey != "" {
		if c.tenants, err = newTenants(metaClient, opts.FairnessKey); err != nil {
			return nil, err
		}
	}
	c.fair.fairnessKey, c.fair.owner = opts.FairnessKey, c.flowOwner
	c.fair.limit = flowLimit(c.opts.Workers)
	c.life = &lifecycle{opts: &c.opts, kube: kube, metrics: m, gate: gate{shard: opts.Shard}, view: &c.view,
		running: map[string]*runningRule{}, pending: map[string]*pendingRule{}}
	c.queue = newQueue(c.fair, m)
	if opts.Shard != nil {
		c.queue = shardQueue{TypedRateLimitingInterface: c.queue, shard: opts.Shard}
	}
	var recorder record.EventRecorder
	c.events, recorder = newRecorder(kube, opts.DryRun)
	if opts.DryRun {
		recorder = nil // nothing of a dry run is recorded
	}
	c.life.apis = &apis.Manager{Client: client, Identity: opts.Identity}
	c.life.revs = &rollouts.Revisions{DryRun: opts.DryRun, Keep: opts.RevisionsKept, Recorder: recorder}
	c.life.rollouts = rollouts.New(c.life.revs, rolloutEngine{c}, m.QueueProvider())
	if opts.holdFirstRevisions {
		c.life.rollouts.FirstWithin = time.Hour
	}
	if opts.RevisionNamespace != "" {
		store := &rollout.Store{Client: kube, Namespace: opts.RevisionNamespace, Installation: opts.Identity.Name(), Signer: opts.Identity}
		c.revInformers = kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithNamespace(opts.RevisionNamespace),
			kubeinformers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = store.Selector("").String() }),
			kubeinformers.WithTransform(dropManagedFields))
		c.life.revs.Store = store
		revs := c.revInformers.Apps().V1().ControllerRevisions()
		c.life.revs.Lister = revs.Lister().ControllerRevisions(opts.RevisionNamespace)
		if _, err := revs.Informer().AddEventHandler(noticeRevisions(c.life.rollouts)); err != nil {
			return nil, err
		}
	}
	written := informers.NewWritten(prove)
	c.reconciler = reconcile.New(reconcile.Options{
		Client: client, Identity: opts.Identity, AdoptUnproven: opts.AdoptUnproven, KeyReplaced: opts.KeyReplaced, DryRun: opts.DryRun,
		MaxWrites: opts.MaxWritesPerReconcile, Recorder: recorder, Metrics: m, Written: written,
		Known: func(rule string) bool { return c.view.Load().known(rule) },
	})
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	c.watcher = watch.NewWatcher(informers.NewSet(client, opts.Resync, prove), mapper, written, watchEvents{c}, opts.Shard != nil)
	c.life.watcher, c.life.reconciler, c.life.enqueue = c.watcher, c.reconciler, c.queue.Add
	if err := m.RegisterFlows(c.fair.snapshot); err != nil {
		return nil, err
	}
	if err := m.RegisterNotReady(c.notReady); err != nil {
		return nil, err
	}
	if err := m.RegisterRollouts(c.rolloutMetrics); err != nil {
		return nil, err
	}
	if opts.Shard != nil {
		if err := c.registerOwnedParents(opts.Registry); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// newRecorder returns an event recorder that writes Events through kube, or, in dry-run
// mode, only logs them.
func newRecorder(kube kubernetes.Interface, dryRun bool) (record.EventBroadcaster, record.EventRecorder) {
	b := record.NewBroadcaster()
	if !dryRun {
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	}
	return b, b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubecel"})
}

// Run processes the queue until ctx ends, then stops every watch.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx)
	logger.Info("Starting controller", "workers", c.opts.Workers, "dryRun", c.opts.DryRun)
	if c.tenants != nil {
		if err := c.tenants.run(ctx, c.kube); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	for range c.opts.Workers {
		wg.Go(func() {
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for c.processNext(ctx) {
				}
			}, time.Second)
		})
	}
	wg.Go(func() { c.life.watchKinds(ctx, c.meta) })
	if c.revInformers != nil {
		c.revInformers.Start(ctx.Done())
	}
	wg.Go(func() { c.life.rollouts.Run(ctx) })
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	c.life.stopAll()
	c.events.Shutdown()
	if c.revInformers != nil {
		c.revInformers.Shutdown()
	}
	logger.Info("Controller stopped")
	return nil
}

// Ready reports whether rules are loaded and every running rule's caches are synced,
// with the names of the rules that wait for their kinds to be served.
func (c *Controller) Ready() (bool, []string) {
	return c.view.Load().synced()
}

// EnqueueAll queues every parent of every running rule, as a resync does.
func (c *Controller) EnqueueAll() {
	c.view.Load().each(func(st *watch.Rule) { enqueueAll(c.queue.Add, st) })
}

// SetRules replaces the running rule set. Only rules whose fingerprint changed are
// restarted; rules whose kinds are not served yet wait and start by themselves.
func (c *Controller) SetRules(ctx context.Context, rs *rules.RuleSet) {
	c.life.set(ctx, rs)
}

// Idle reports whether no key is queued or being reconciled (keys waiting for a delayed
// retry are not counted).
func (c *Controller) Idle() bool {
	return c.fair.waiting() == 0 && c.busy.Load() == 0
}

// flowLimit is the most reconciles one flow of the fair queue runs at once with this many
// workers: all but one, from four workers up, so that a tenant with nothing running finds
// a worker free however busy another is; with fewer, no limit.
func flowLimit(workers int) int {
	if workers < 4 {
		return 0
	}
	return workers - 1
}

// Reconciles is the number of reconciles started so far. A caller that looks at Idle
// now and then sees by it the work that came and went between two looks.
func (c *Controller) Reconciles() uint64 {
	return c.reconciles.Load()
}

// flowOwner says who owns a key's work, for the fair queue: the origin of its rule, and
// the tenant its namespace's fairness key label names.
func (c *Controller) flowOwner(key queueKey) flowOwner {
	var o flowOwner
	if st := c.view.Load().get(key.Rule); st != nil {
		o.Origin = st.Rule.Origin
	}
	if c.tenants != nil && key.Namespace != "" {
		o.Tenant = c.tenants.of(key.Namespace)
	}
	return o
}
