// Package leader runs a function only while this process holds a Lease
// (coordination.k8s.io), so that one of several replicas of kubecel writes.
//
// Guarantees:
//   - The function given to Run starts only once the Lease is held, and its context is
//     canceled when the Lease is lost; Run then returns an error, so the process exits
//     and a restart stands by again.
//   - The Lease is released only after the function has returned, so the next leader
//     never runs beside this one.
//   - Every write made with the rest.Config given to New is refused unless this
//     replica renewed the Lease within the renew deadline (write fencing): a leader that
//     froze (SIGSTOP, a stalled node) and wakes up after a standby took over finds its
//     writes refused instead of racing the new leader. Reads always pass.
//   - A release never clears a Lease that another replica holds.
package leader

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/internal/lease"
)

// serviceAccountNamespace holds the pod's namespace inside a cluster.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Options configure the election.
type Options struct {
	// Namespace of the Lease; empty: the pod's namespace in a cluster, kubecel-system
	// outside one.
	Namespace string
	// ID is the Lease's name.
	ID string
	// Timing: a standby takes over the lease duration after the leader's last renewal;
	// the leader keeps trying to renew for the renew deadline before it gives up, and
	// may write for as long after the start of its last renewal.
	lease.Timing
}

// Validate checks the timings (lease.Timing.Validate).
func (o Options) Validate() error {
	if err := o.Timing.Validate(); err != nil {
		return fmt.Errorf("leader election timings: %w", err)
	}
	return nil
}

// Elector runs a function only while this process holds the Lease. A nil *Elector
// (leader election off) runs it unconditionally.
type Elector struct {
	opts     Options
	identity string
	lock     *fencedLock
	leading  atomic.Bool
	// leader is the holder of the Lease last observed (its identity).
	leader atomic.Pointer[string]
	gauge  prometheus.Gauge
}

// New prepares leader election on cfg's cluster. It gives every request made with cfg
// the user agent kubecel/<identity>, so the API server's audit log tells replicas
// apart, and makes cfg's writes fail unless the Lease was renewed within the renew
// deadline (see fencedLock). The Lease itself is written with a copy of cfg taken
// before that. The gauge kubecel_leader, registered on reg, is 1 while this replica
// leads.
func New(o Options, cfg *rest.Config, reg *prometheus.Registry) (*Elector, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Namespace == "" {
		o.Namespace = PodNamespace()
	}
	identity, kube, err := Identify(cfg)
	if err != nil {
		return nil, err
	}
	l := &Elector{
		opts:     o,
		identity: identity,
		lock: &fencedLock{
			Interface: &resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Namespace: o.Namespace, Name: o.ID},
				Client:     kube.CoordinationV1(),
				LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
			},
			writeWindow: o.RenewDeadline,
		},
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubecel_leader", Help: "1 while this replica holds the leader election Lease and runs the controller, 0 on standby.",
		}),
	}
	if err := reg.Register(l.gauge); err != nil {
		return nil, err
	}
	FenceWrites(cfg, l.lock.mayWrite, "the Lease "+l.lock.Describe())
	return l, nil
}

// PodNamespace is the pod's namespace inside a cluster (read from its service account
// mount), kubecel-system outside one.
func PodNamespace() string {
	if data, err := os.ReadFile(serviceAccountNamespace); err == nil && strings.TrimSpace(string(data)) != "" {
		return strings.TrimSpace(string(data))
	}
	return "kubecel-system"
}

// Identify gives this replica an identity (NewIdentity) and every request made with
// cfg the user agent kubecel/<identity>, so the API server's audit log tells replicas
// apart. It returns a client made from cfg as it is then, before any fencing is added
// to cfg, for the replica's own Lease.
func Identify(cfg *rest.Config) (string, kubernetes.Interface, error) {
	identity, err := NewIdentity()
	if err != nil {
		return "", nil, err
	}
	cfg.UserAgent = "kubecel/" + identity
	kube, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return "", nil, err
	}
	return identity, kube, nil
}

// NewIdentity is the hostname (the pod's name in a cluster) and a random suffix, so a
// restarted pod never mistakes the Lease of its previous run for its own.
func NewIdentity() (string, error) {
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

// Run calls lead once this process holds the Lease and returns when ctx ends or lead
// returns. When the Lease is lost, lead's context is canceled and Run returns an error
// once lead has returned: the process must exit, and a restart stands by again. The
// Lease is released (ReleaseOnCancel) only after lead has returned, so the next leader
// never overlaps with this one.
func (l *Elector) Run(ctx context.Context, lead func(context.Context) error) error {
	if l == nil {
		return lead(ctx)
	}
	logger := klog.FromContext(ctx).WithValues("lease", l.lock.Describe(), "identity", l.identity)
	started := make(chan context.Context, 1)
	electCtx, stopElecting := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), logger))
	defer stopElecting()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            l.lock,
		LeaseDuration:   l.opts.LeaseDuration,
		RenewDeadline:   l.opts.RenewDeadline,
		RetryPeriod:     l.opts.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            l.opts.ID,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) { started <- leadCtx },
			OnStoppedLeading: func() { l.gauge.Set(0) },
			OnNewLeader: func(id string) {
				l.leader.Store(&id)
				if id == l.identity {
					logger.Info("Leader elected", "leader", id)
					return
				}
				// Another process of this installation leads (a replica, or a
				// kubecel run elsewhere with the same identity Secret): say so
				// before this one writes anything.
				logger.Info("Another process of this installation leads: standing by until it stops; to run beside it on other parents, give this process its own --installation and --identity-secret",
					"leader", id)
			},
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

// Standby reports whether this replica waits for the Lease: false while it leads, and
// always false for a nil *Elector.
func (l *Elector) Standby() bool {
	return l != nil && !l.leading.Load()
}

// Status says, for /readyz, whether this replica is a standby that knows it (another
// replica holds the Lease), and which Lease it waits for and who holds it. A replica that
// has not yet learnt who holds the Lease is not ready: it may be about to lead.
func (l *Elector) Status() (ready bool, note string) {
	id := l.leader.Load()
	if id == nil || *id == "" || *id == l.identity {
		return false, fmt.Sprintf("waiting for the installation's Lease %s", l.lock.Describe())
	}
	return true, fmt.Sprintf("standby: the installation's Lease %s is held by %s", l.lock.Describe(), *id)
}
