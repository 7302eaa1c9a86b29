package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine"
)

// serviceAccountNamespace holds the pod's namespace inside a cluster.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// leaderOptions are the leader election flags of `kubecel run`.
type leaderOptions struct {
	enabled       bool
	namespace     string
	id            string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
}

func (o *leaderOptions) addFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.enabled, "leader-elect", false, "run the controller only while holding a Lease, so that one of several replicas writes")
	f.StringVar(&o.namespace, "leader-elect-namespace", "", "namespace of the Lease (default: the pod's namespace in a cluster, kubecel-system outside one)")
	f.StringVar(&o.id, "leader-elect-id", "kubecel", "name of the Lease")
	f.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a standby waits after the leader's last renewal before taking over")
	f.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it gives up, stops and exits; also how long after its last renewal it may write")
	f.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "how often to try to acquire or renew the Lease")
}

// leader runs the controller only while this process holds the Lease. A nil *leader
// (leader election off) runs it unconditionally.
type leader struct {
	opts     leaderOptions
	identity string
	lock     *fencedLock
	leading  atomic.Bool
	gauge    prometheus.Gauge
}

// newLeader prepares leader election on cfg's cluster, or returns nil when it is off.
// It gives every request made with cfg the user agent kubecel/<identity>, so the API
// server's audit log tells replicas apart, and makes cfg's writes fail unless the
// Lease was renewed within the renew deadline (see fencedLock). The Lease itself is
// written with a copy of cfg taken before that.
func newLeader(o leaderOptions, cfg *rest.Config, reg *prometheus.Registry) (*leader, error) {
	if !o.enabled {
		return nil, nil
	}
	if o.namespace == "" {
		o.namespace = "kubecel-system"
		if data, err := os.ReadFile(serviceAccountNamespace); err == nil && strings.TrimSpace(string(data)) != "" {
			o.namespace = strings.TrimSpace(string(data))
		}
	}
	identity, err := newIdentity()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "kubecel/" + identity
	kube, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, err
	}
	l := &leader{
		opts:     o,
		identity: identity,
		lock: &fencedLock{
			Interface: &resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Namespace: o.namespace, Name: o.id},
				Client:     kube.CoordinationV1(),
				LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
			},
			writeWindow: o.renewDeadline,
		},
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubecel_leader", Help: "1 while this replica holds the leader election Lease and runs the controller, 0 on standby.",
		}),
	}
	if err := reg.Register(l.gauge); err != nil {
		return nil, err
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &fencedTransport{next: rt, lock: l.lock} })
	return l, nil
}

// newIdentity is the hostname (the pod's name in a cluster) and a random suffix, so a
// restarted pod never mistakes the Lease of its previous run for its own.
func newIdentity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", err
	}
	suffix := make([]byte, 4)
	if _, err := io.ReadFull(rand.Reader, suffix); err != nil {
		return "", err
	}
	return host + "_" + hex.EncodeToString(suffix), nil
}

// run calls lead once this process holds the Lease and returns when ctx ends or lead
// returns. When the Lease is lost, lead's context is canceled and run returns an error
// once lead has returned: the process must exit, and a restart stands by again. The
// Lease is released (ReleaseOnCancel) only after lead has returned, so the next leader
// never overlaps with this one.
func (l *leader) run(ctx context.Context, lead func(context.Context) error) error {
	if l == nil {
		return lead(ctx)
	}
	logger := klog.FromContext(ctx).WithValues("lease", l.lock.Describe(), "identity", l.identity)
	started := make(chan context.Context, 1)
	electCtx, stopElecting := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), logger))
	defer stopElecting()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            l.lock,
		LeaseDuration:   l.opts.leaseDuration,
		RenewDeadline:   l.opts.renewDeadline,
		RetryPeriod:     l.opts.retryPeriod,
		ReleaseOnCancel: true,
		Name:            l.opts.id,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) { started <- leadCtx },
			OnStoppedLeading: func() { l.gauge.Set(0) },
			OnNewLeader:      func(id string) { logger.Info("Leader elected", "leader", id) },
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	electDone := make(chan struct{})
	go func() {
		defer close(electDone)
		elector.Run(electCtx)
	}()
	logger.Info("Standing by until this replica holds the Lease")
	select {
	case <-ctx.Done():
		stopElecting()
		<-electDone
		return nil
	case <-electDone:
		return errors.New("leader election ended before this replica led")
	case leadCtx := <-started:
		logger.Info("Leading: starting the controller")
		l.leading.Store(true)
		l.gauge.Set(1)
		runCtx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(leadCtx, cancel)
		err := lead(runCtx)
		stop()
		cancel()
		lost := leadCtx.Err() != nil && ctx.Err() == nil
		stopElecting()
		<-electDone
		if lost {
			return fmt.Errorf("lost the Lease %s: the controller stopped so that only the new leader writes", l.lock.Describe())
		}
		return err
	}
}

// ready is /readyz: the running controller's readiness (not ready before it exists).
// A standby is ready: waiting is its job, and a rolling update waits for new pods to be
// ready, so a standby that said otherwise would stall every rollout.
func (l *leader) ready(running *atomic.Pointer[engine.Controller]) func() (bool, []string) {
	return func() (bool, []string) {
		if l != nil && !l.leading.Load() {
			return true, nil
		}
		if ctrl := running.Load(); ctrl != nil {
			return ctrl.Ready()
		}
		return false, nil
	}
}

// fencedLock is the Lease lock with two guards that client-go's elector lacks.
//
// It remembers when this replica last renewed the Lease, and allows writes (see
// fencedTransport) only for writeWindow (the renew deadline) after the start of that
// renewal. A standby takes over no sooner than the lease duration after it saw that
// renewal, which is later still, so a leader that froze (SIGSTOP, a stalled node) and
// wakes up finds its writes refused instead of racing the new leader, until its elector
// notices the loss and the process exits.
//
// Reading the Lease with another holder in it stops writes at once. And it refuses to
// release a Lease that another replica holds: client-go's elector, when it gives up
// without having read the Lease since its last renewal, releases it by the record it
// last saw, which would clear the new leader's hold.
type fencedLock struct {
	resourcelock.Interface
	writeWindow time.Duration

	mu         sync.Mutex
	writeUntil time.Time // monotonic
	holder     string    // holder in the Lease as last read
}

func (l *fencedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	if err == nil {
		l.mu.Lock()
		l.holder = rec.HolderIdentity
		if l.holder != l.Identity() {
			l.writeUntil = time.Time{}
		}
		l.mu.Unlock()
	}
	return rec, raw, err
}

func (l *fencedLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	err := l.Interface.Create(ctx, rec)
	if err == nil {
		l.renewed(start, rec)
	}
	return err
}

func (l *fencedLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	if rec.HolderIdentity == "" { // a release
		l.mu.Lock()
		l.writeUntil = time.Time{}
		holder := l.holder
		l.mu.Unlock()
		if holder != l.Identity() {
			return fmt.Errorf("not releasing the Lease: %s holds it", holder)
		}
	}
	err := l.Interface.Update(ctx, rec)
	if err == nil {
		l.renewed(start, rec)
	}
	return err
}

func (l *fencedLock) renewed(start time.Time, rec resourcelock.LeaderElectionRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holder = rec.HolderIdentity
	if rec.HolderIdentity == l.Identity() {
		l.writeUntil = start.Add(l.writeWindow)
	}
}

// mayWrite reports whether this replica renewed the Lease recently enough to write.
func (l *fencedLock) mayWrite() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Now().Before(l.writeUntil)
}

// fencedTransport refuses write requests while the lock does not allow them.
type fencedTransport struct {
	next http.RoundTripper
	lock *fencedLock
}

func (t *fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if !t.lock.mayWrite() {
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, fmt.Errorf("%s %s refused: this replica has not renewed the Lease %s recently enough to be sure it still leads", req.Method, req.URL.Path, t.lock.Describe())
		}
	}
	return t.next.RoundTrip(req)
}
