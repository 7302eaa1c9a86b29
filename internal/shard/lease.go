package shard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

var errLeaseGone = errors.New("the membership Lease was deleted: another member found it expired")

// leaseClient is a member's own Lease and its view of the ring's other Leases.
type leaseClient struct {
	opts     Options
	identity string
	name     string
	leases   coordinationclient.LeaseInterface
	kube     kubernetes.Interface
	lister   cache.Indexer

	writing sync.Mutex // one write of the member's Lease at a time

	mu        sync.Mutex
	own       *coordinationv1.Lease // as last written
	lastRenew time.Time             // start of the last successful write of own (monotonic)
	gone      bool                  // own was deleted by another member

	// seen is when each other Lease (by name) was seen to change last, by this
	// member's clock: a Lease is live for the lease duration after that, as in
	// client-go's leader election, so that clocks of different nodes never compare.
	seen map[string]observed
}

type observed struct {
	resourceVersion string
	at              time.Time
}

func newLeaseClient(kube kubernetes.Interface, o Options, identity string) *leaseClient {
	suffix := make([]byte, 4)
	_, _ = io.ReadFull(rand.Reader, suffix)
	return &leaseClient{
		opts: o, identity: identity, name: o.Ring + "-" + hex.EncodeToString(suffix),
		leases: kube.CoordinationV1().Leases(o.Namespace), kube: kube, seen: map[string]observed{},
	}
}

func (l *leaseClient) describe() string { return l.opts.Namespace + "/" + l.name }

// watch starts an informer on the ring's Leases; the channel gets a value after each
// change.
func (l *leaseClient) watch(ctx context.Context) (<-chan struct{}, error) {
	selector := labels.Set{LabelRing: l.opts.Ring}.AsSelector().String()
	lw := cache.NewFilteredListWatchFromClient(l.kube.CoordinationV1().RESTClient(), "leases", l.opts.Namespace,
		func(o *metav1.ListOptions) {
			o.LabelSelector = selector
			o.FieldSelector = fields.Everything().String()
		})
	inf := cache.NewSharedIndexInformer(lw, &coordinationv1.Lease{}, 0, cache.Indexers{})
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}); err != nil {
		return nil, err
	}
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("list the ring's Leases in %s: %w", l.opts.Namespace, context.Cause(ctx))
	}
	l.lister = inf.GetIndexer()
	return changed, nil
}

// join creates the member's Lease.
func (l *leaseClient) join(ctx context.Context) error {
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: l.name, Labels: map[string]string{LabelRing: l.opts.Ring}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(l.identity),
			LeaseDurationSeconds: ptr.To(int32(l.opts.LeaseDuration.Round(time.Second) / time.Second)),
			AcquireTime:          &now,
			RenewTime:            &now,
		},
	}
	start := time.Now()
	got, err := l.leases.Create(ctx, lease, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create the membership Lease %s: %w", l.describe(), err)
	}
	l.renewed(start, got)
	return nil
}

// renew writes the member's Lease with a new renew time and the ring version that ack
// gives. ack is called once the write is this one's turn, so that a renewal that waited
// for an acknowledgement's write never writes back the version before it. A member
// that did not renew within the renew deadline does not try: others may count it gone
// by now.
func (l *leaseClient) renew(ctx context.Context, ackOf func() string) error {
	l.writing.Lock()
	defer l.writing.Unlock()
	if l.lost() {
		return errors.New("the last renewal is older than the renew deadline")
	}
	ack := ackOf()
	l.mu.Lock()
	lease := l.own.DeepCopy()
	l.mu.Unlock()
	for range 2 {
		now := metav1.NewMicroTime(time.Now())
		lease.Spec.RenewTime = &now
		if lease.Annotations == nil {
			lease.Annotations = map[string]string{}
		}
		lease.Annotations[AnnotationAck] = ack
		start := time.Now()
		got, err := l.leases.Update(ctx, lease, metav1.UpdateOptions{})
		switch {
		case err == nil:
			l.renewed(start, got)
			return nil
		case apierrors.IsNotFound(err):
			l.mu.Lock()
			l.gone = true
			l.mu.Unlock()
			return errLeaseGone
		case !apierrors.IsConflict(err):
			return err
		}
		// Someone else wrote it (kubectl label, say): start from what is stored.
		if lease, err = l.leases.Get(ctx, l.name, metav1.GetOptions{}); err != nil {
			return err
		}
		if h := lease.Spec.HolderIdentity; h == nil || *h != l.identity {
			l.mu.Lock()
			l.gone = true
			l.mu.Unlock()
			return fmt.Errorf("the membership Lease %s names another holder", l.describe())
		}
	}
	return fmt.Errorf("update the membership Lease %s: conflicts", l.describe())
}

func (l *leaseClient) renewed(start time.Time, lease *coordinationv1.Lease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.own, l.lastRenew = lease, start
}

// mayWrite reports whether the member renewed its Lease recently enough to write.
func (l *leaseClient) mayWrite() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.gone && !l.lastRenew.IsZero() && time.Since(l.lastRenew) < l.opts.RenewDeadline
}

// lost reports whether the member can no longer count itself a member: its Lease is
// gone, or its last renewal is older than the renew deadline.
func (l *leaseClient) lost() bool { return !l.mayWrite() }

// ringView is what a member sees of the other members.
type ringView struct {
	live    []string          // identities of the live members, itself left out
	acks    map[string]string // ring version each live member acknowledges
	expired []*coordinationv1.Lease
}

func (l *leaseClient) view(now time.Time) ringView {
	v := ringView{acks: map[string]string{}}
	present := map[string]bool{}
	for _, item := range l.lister.List() {
		lease := item.(*coordinationv1.Lease)
		if lease.Name == l.name {
			continue
		}
		present[lease.Name] = true
		seen, ok := l.seen[lease.Name]
		if !ok || seen.resourceVersion != lease.ResourceVersion {
			seen = observed{resourceVersion: lease.ResourceVersion, at: now}
			l.seen[lease.Name] = seen
		}
		holder := ptr.Deref(lease.Spec.HolderIdentity, "")
		switch age := now.Sub(seen.at); {
		case holder != "" && age < l.opts.LeaseDuration:
			v.live = append(v.live, holder)
			v.acks[holder] = lease.Annotations[AnnotationAck]
		case age > 2*l.opts.LeaseDuration:
			v.expired = append(v.expired, lease)
		}
	}
	for name := range l.seen {
		if !present[name] {
			delete(l.seen, name)
		}
	}
	return v
}

// deleteExpired deletes Leases that nobody renewed for twice the lease duration. The
// preconditions make sure it deletes the very version it saw unrenewed.
func (l *leaseClient) deleteExpired(ctx context.Context, expired []*coordinationv1.Lease) error {
	var errs []error
	for _, lease := range expired {
		if !l.mayWrite() {
			return nil
		}
		err := l.leases.Delete(ctx, lease.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{
			UID: ptr.To(lease.UID), ResourceVersion: ptr.To(lease.ResourceVersion)}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete %s/%s: %w", lease.Namespace, lease.Name, err))
		}
	}
	return errors.Join(errs...)
}

// leave deletes the member's own Lease, unless the member lost it already: then the
// others have dropped it or will, and a member that lost its Lease writes nothing.
func (l *leaseClient) leave(ctx context.Context) error {
	lost := l.lost()
	l.mu.Lock()
	own := l.own
	l.gone = true
	l.mu.Unlock()
	if own == nil || lost {
		return nil
	}
	err := l.leases.Delete(ctx, own.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(own.UID)}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
