package shard

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/internal/leader"
	"github.com/kubecel/kubecel/internal/lease"
	"github.com/kubecel/kubecel/rules/contract"
)

// Labels and annotations on the membership Leases.
const (
	// LabelRing names the ring a Lease is a member of.
	LabelRing = "kubecel.dev/ring"
	// AnnotationAck holds the version of the ring the member has acknowledged: it
	// serves no bucket that this ring gives another member.
	AnnotationAck = "kubecel.dev/ring-ack"
)

// Options configure a member.
type Options struct {
	// Namespace of the Leases; empty: the pod's namespace in a cluster,
	// kubecel-system outside one.
	Namespace string
	// Ring is the ring's name: the value of LabelRing on its Leases.
	Ring string
	// Timing: the others drop a member the lease duration after its last renewal; a
	// member may write for the renew deadline after the start of its last renewal; it
	// renews its Lease and looks at the ring every retry period.
	lease.Timing
}

// Validate checks the ring's name and the timings (lease.Timing.Validate).
func (o Options) Validate() error {
	if errs := validRing(o.Ring); errs != "" {
		return fmt.Errorf("--sharding-ring %q: %s", o.Ring, errs)
	}
	if err := o.Timing.Validate(); err != nil {
		return fmt.Errorf("sharding timings: %w", err)
	}
	return nil
}

// Controller is what a member drives: the engine.
type Controller interface {
	// WatchBuckets makes the caches of children hold the children of these buckets
	// (all of them when every bucket is given), and returns once they have synced.
	WatchBuckets(ctx context.Context, buckets []int) error
	// EnqueueMoved queues every parent whose bucket gained says, and calls done once
	// each of them has been reconciled once.
	EnqueueMoved(gained func(bucket int) bool, done func())
}

// Member is one replica's membership in a ring, and the gate that tells its controller
// which parents it serves.
type Member struct {
	opts     Options
	identity string
	lease    *leaseClient
	metrics  *memberMetrics

	mu       sync.Mutex
	drained  *sync.Cond // signalled when a bucket's running reconciles reach zero
	serving  Set
	inflight [contract.Buckets]int
	// ack is the ring version this member last acknowledged, and acked when it first
	// saw that ring; served is the version it last expanded to ("" before the first).
	ack    string
	acked  time.Time
	served string
	ring   Ring

	joined chan struct{} // closed once the member's Lease exists
}

// New prepares membership in a ring on cfg's cluster. Like leader.New, it gives every
// request made with cfg the user agent kubecel/<identity>, and fences cfg's writes:
// they fail unless the member renewed its Lease within the renew deadline. Its metrics
// (kubecel_shard_*) are registered on reg.
func New(o Options, cfg *rest.Config, reg *prometheus.Registry) (*Member, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Namespace == "" {
		o.Namespace = leader.PodNamespace()
	}
	identity, kube, err := leader.Identify(cfg)
	if err != nil {
		return nil, err
	}
	m := &Member{opts: o, identity: identity, lease: newLeaseClient(kube, o, identity), joined: make(chan struct{})}
	m.drained = sync.NewCond(&m.mu)
	if m.metrics, err = newMemberMetrics(reg); err != nil {
		return nil, err
	}
	leader.FenceWrites(cfg, m.lease.mayWrite, "its membership Lease "+m.lease.describe())
	return m, nil
}

// Joined is closed once the member holds its Lease: its writes pass from then on.
func (m *Member) Joined() <-chan struct{} { return m.joined }

// Identity is the member's identity: the holder of its Lease.
func (m *Member) Identity() string { return m.identity }

// Begin reports whether the member serves bucket now. When it does, the caller must
// call end once its work on the bucket is done: until then the member does not give
// the bucket away.
func (m *Member) Begin(bucket int) (end func(), ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.serving.Has(bucket) {
		return nil, false
	}
	m.inflight[bucket]++
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.inflight[bucket]--; m.inflight[bucket] == 0 {
			m.drained.Broadcast()
		}
	}, true
}

// Serves reports whether the member serves bucket now.
func (m *Member) Serves(bucket int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.serving.Has(bucket)
}

// Status says whether the member serves an agreed ring yet, and which: "ring <version>:
// serving <k> of 256 buckets, <n> members".
func (m *Member) Status() (bool, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.served == "" {
		return false, fmt.Sprintf("ring: waiting for the members to agree (%d seen)", len(m.ring))
	}
	return true, fmt.Sprintf("ring %s: serving %d of %d buckets, %d members", m.served, m.serving.Len(), contract.Buckets, len(m.ring))
}

// Run joins the ring and follows it until ctx ends: it renews the member's Lease, and
// on every change of the ring shrinks and grows what the member serves (see the package
// doc). It returns an error when the Lease cannot be renewed in time: the member's
// writes are already fenced then, and the process must exit.
func (m *Member) Run(ctx context.Context, ctrl Controller) error {
	logger := klog.FromContext(ctx).WithValues("ring", m.opts.Ring, "identity", m.identity)
	ctx = klog.NewContext(ctx, logger)
	changed, err := m.lease.watch(ctx)
	if err != nil {
		return err
	}
	if err := m.lease.join(ctx); err != nil {
		return err
	}
	logger.Info("Joined the ring", "lease", m.lease.describe())
	close(m.joined)
	// Renewals run on their own, so that a long step (a cache sync at a handover) never
	// delays them past the renew deadline.
	lost := make(chan error, 1)
	go func() { lost <- m.renewLoop(ctx) }()
	tick := time.NewTicker(m.opts.RetryPeriod)
	defer tick.Stop()
	for {
		if err := m.step(ctx, ctrl); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if m.lease.lost() {
				return fmt.Errorf("membership Lease %s: %w", m.lease.describe(), err)
			}
			logger.Error(err, "Cannot follow the ring; retrying")
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-lost:
			return err
		case <-tick.C:
		case <-changed:
		}
	}
}

// renewLoop renews the member's Lease every retry period until ctx ends (nil) or the
// member lost it (an error).
func (m *Member) renewLoop(ctx context.Context) error {
	tick := time.NewTicker(m.opts.RetryPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		err := m.lease.renew(ctx, m.currentAck)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return nil
		case m.lease.lost():
			return fmt.Errorf("membership Lease %s not renewed within %s: stopping, so that the other members take its buckets over: %w", m.lease.describe(), m.opts.RenewDeadline, err)
		default:
			klog.FromContext(ctx).Error(err, "Cannot renew the membership Lease; retrying")
		}
	}
}

func (m *Member) currentAck() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ack
}

// step looks at the ring once: it acknowledges a new ring (after dropping the buckets it
// gives away), or grows to the ring every member acknowledged.
func (m *Member) step(ctx context.Context, ctrl Controller) error {
	logger := klog.FromContext(ctx)
	view := m.lease.view(time.Now())
	ring := NewRing(append(view.live, m.identity)...)
	version := ring.Version()
	owned := ring.Owned(m.identity)
	m.mu.Lock()
	m.ring = ring
	ack := m.ack
	m.mu.Unlock()
	m.metrics.members.Set(float64(len(ring)))
	if err := m.lease.deleteExpired(ctx, view.expired); err != nil {
		logger.Error(err, "Cannot delete an expired membership Lease")
	}
	if version != ack {
		lost, err := m.shrink(ctx, owned)
		if err != nil {
			return err
		}
		m.mu.Lock()
		m.ack, m.acked = version, time.Now()
		m.mu.Unlock()
		if err := m.lease.renew(ctx, m.currentAck); err != nil {
			return fmt.Errorf("acknowledge ring %s: %w", version, err)
		}
		logger.Info("Ring changed", "version", version, "members", strings.Join(ring, ","), "gave", lost.String())
		if lost.Len() > 0 {
			// The caches may let go of what the member no longer serves.
			return m.watchBuckets(ctx, ctrl, m.servingNow())
		}
		return nil
	}
	for _, id := range ring {
		if id != m.identity && view.acks[id] != version {
			return nil // waiting for the others to acknowledge
		}
	}
	m.mu.Lock()
	served, acked := m.served, m.acked
	m.mu.Unlock()
	if served == version {
		return nil
	}
	// Every member acknowledged: none serves a bucket that this ring gives this one.
	if err := m.watchBuckets(ctx, ctrl, owned); err != nil {
		return err
	}
	m.mu.Lock()
	gained := owned.Minus(m.serving)
	m.serving, m.served = owned, version
	m.mu.Unlock()
	m.metrics.buckets.Set(float64(owned.Len()))
	m.metrics.handovers.Inc()
	logger.Info("Serving the ring", "version", version, "buckets", owned.Len(), "gained", gained.String())
	ctrl.EnqueueMoved(gained.Has, func() { m.metrics.handoverSeconds.Observe(time.Since(acked).Seconds()) })
	return nil
}

// syncTimeout bounds a cache sync in a step: a sync that hangs must not keep the member
// from acknowledging the next ring, which every other member would wait for.
const syncTimeout = 2 * time.Minute

func (m *Member) watchBuckets(ctx context.Context, ctrl Controller, buckets Set) error {
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	return ctrl.WatchBuckets(ctx, buckets.List())
}

// shrink stops serving the buckets that owned leaves out, and waits until no reconcile
// of them runs. It returns the buckets it gave away.
func (m *Member) shrink(ctx context.Context, owned Set) (Set, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	lost := m.serving.Minus(owned)
	m.serving = m.serving.And(owned)
	m.metrics.buckets.Set(float64(m.serving.Len()))
	stop := context.AfterFunc(ctx, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.drained.Broadcast()
	})
	defer stop()
	for _, b := range lost.List() {
		for m.inflight[b] > 0 {
			if ctx.Err() != nil {
				return lost, ctx.Err()
			}
			m.drained.Wait()
		}
	}
	return lost, nil
}

func (m *Member) servingNow() Set {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.serving
}

// Leave stops serving every bucket, waits until no reconcile of them runs, and deletes
// the member's Lease, so that the others take its buckets over at once. Call it once
// the controller is stopping.
func (m *Member) Leave(ctx context.Context) error {
	if _, err := m.shrink(ctx, Set{}); err != nil {
		return fmt.Errorf("leave the ring: %w", err)
	}
	if err := m.lease.leave(ctx); err != nil {
		return fmt.Errorf("leave the ring: %w", err)
	}
	klog.FromContext(ctx).Info("Left the ring", "ring", m.opts.Ring, "lease", m.lease.describe())
	return nil
}

// validRing checks that the ring's name can be a label value and begin a Lease's name.
func validRing(name string) string {
	if name == "" || len(name) > 40 {
		return "must be 1 to 40 characters"
	}
	for i, r := range name {
		lower := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		if !lower && !(r == '-' && i > 0 && i < len(name)-1) {
			return "must be lower-case letters, digits and inner dashes"
		}
	}
	return ""
}
