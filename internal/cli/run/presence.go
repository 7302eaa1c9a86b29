package run

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/kubecel/kubecel/internal/lease"
	"github.com/kubecel/kubecel/internal/shard"
)

// The processes of one installation meet at its Leases: with leader election (the
// default) at the installation's leader Lease, where all but one stand by; with
// --sharding at the ring's membership Leases, where each serves its share. A process of
// one mode beside live processes of the other would fight them (both would write every
// parent), so it refuses to start, naming them and the flags that tell installations
// apart.

// refuseShardedPeers returns an error when live members of the installation's ring
// exist: a process with leader election would run beside them.
func refuseShardedPeers(ctx context.Context, kube kubernetes.Interface, installation string, ring ShardOptions) error {
	list, err := kube.CoordinationV1().Leases(ring.Options.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.Set{shard.LabelRing: ring.Options.Ring}.AsSelector().String(),
	})
	if apierrors.IsForbidden(err) {
		// RBAC of an older release (leader election only got, created and updated its
		// Lease): the controller runs, and says what it could not check.
		klog.FromContext(ctx).Error(err, "Cannot look for sharded processes of this installation; running without that check (grant list on leases in this namespace)",
			"installation", installation, "namespace", ring.Options.Namespace)
		return nil
	}
	if err != nil {
		return fmt.Errorf("look for sharded processes of installation %q (Leases of ring %q in %s): %w", installation, ring.Options.Ring, ring.Options.Namespace, err)
	}
	var holders []string
	now := time.Now()
	for i := range list.Items {
		if l := &list.Items[i]; lease.Live(l, now) {
			holders = append(holders, ptr.Deref(l.Spec.HolderIdentity, ""))
		}
	}
	if len(holders) == 0 {
		return nil
	}
	slices.Sort(holders)
	return fmt.Errorf("installation %q already runs sharded (ring %q in %s: %s): this process would write the same parents; start it with --sharding to join them, or give it its own --installation (and --identity-secret) to run a separate installation",
		installation, ring.Options.Ring, ring.Options.Namespace, strings.Join(holders, ", "))
}

// refuseLeader returns an error when the installation's leader Lease is held: a
// sharded process would run beside its leader.
func refuseLeader(ctx context.Context, kube kubernetes.Interface, installation string, elect LeaderOptions) error {
	l, err := kube.CoordinationV1().Leases(elect.Options.Namespace).Get(ctx, elect.Options.ID, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("look for a leader of installation %q (Lease %s/%s): %w", installation, elect.Options.Namespace, elect.Options.ID, err)
	case !lease.Live(l, time.Now()):
		return nil
	}
	return fmt.Errorf("installation %q already runs with leader election (Lease %s/%s held by %s): this process would write the same parents; start it without --sharding to stand by, or give it its own --installation (and --identity-secret) to run a separate installation",
		installation, elect.Options.Namespace, elect.Options.ID, ptr.Deref(l.Spec.HolderIdentity, ""))
}
