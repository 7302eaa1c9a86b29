// Package lease holds the timings of kubecel's Leases (coordination.k8s.io), once for
// both of their uses: the leader election Lease (internal/leader, kubecel run
// --leader-elect) and the membership Leases of a ring (internal/shard, kubecel run
// --sharding). It defines their defaults, the rule they must follow and the flags that
// set them.
//
// Both uses rest on the same three durations and the same promise: a holder writes only
// while its last renewal is less than the renew deadline old, and the others take over
// only once its last renewal is the lease duration old, which is later.
package lease

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// Timing is how a Lease is held.
type Timing struct {
	// LeaseDuration is how long after the holder's last renewal the others take over.
	LeaseDuration time.Duration
	// RenewDeadline is how long after the start of its last renewal the holder may
	// write; a holder that cannot renew for this long stops.
	RenewDeadline time.Duration
	// RetryPeriod is how often a replica tries to take or renew its Lease.
	RetryPeriod time.Duration
}

// Default is client-go's (and kube-controller-manager's) leader election timing.
var Default = Timing{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}

// jitter is how much later than the retry period a try may come: client-go's leader
// election waits up to 1.2 retry periods between tries (leaderelection.JitterFactor).
const jitter = 1.2

// Validate checks that the retry period is positive, that the renew deadline leaves room
// for more than one try (more than 1.2 retry periods, as client-go's leader election
// requires) and that the lease duration is longer than the renew deadline.
func (t Timing) Validate() error {
	if t.RetryPeriod <= 0 || t.RetryPeriod >= t.RenewDeadline || t.RenewDeadline >= t.LeaseDuration {
		return fmt.Errorf("want retry period (%s) < renew deadline (%s) < lease duration (%s)", t.RetryPeriod, t.RenewDeadline, t.LeaseDuration)
	}
	if tries := time.Duration(jitter * float64(t.RetryPeriod)); t.RenewDeadline <= tries {
		return fmt.Errorf("want a renew deadline (%s) longer than 1.2 retry periods (%s), to leave room for another try", t.RenewDeadline, tries)
	}
	return nil
}

// AddFlags adds --PREFIX-lease-duration, --PREFIX-renew-deadline and
// --PREFIX-retry-period to f, set to Default.
func (t *Timing) AddFlags(f *pflag.FlagSet, prefix string) {
	f.DurationVar(&t.LeaseDuration, prefix+"-lease-duration", Default.LeaseDuration, "how long after the last renewal of a Lease the other replicas take over from its holder")
	f.DurationVar(&t.RenewDeadline, prefix+"-renew-deadline", Default.RenewDeadline, "how long after its last renewal the holder of a Lease may write; one that cannot renew for this long stops and exits")
	f.DurationVar(&t.RetryPeriod, prefix+"-retry-period", Default.RetryPeriod, "how often each replica tries to take or renew its Lease")
}
