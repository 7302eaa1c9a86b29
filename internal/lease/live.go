package lease

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// Live reports whether l is held and was renewed less than its lease duration before
// now, by the clocks of its holder and of the caller. It is for a one-off look (does
// some other process hold this Lease?): the holders themselves compare only their own
// observations over time, as client-go's leader election does, and never two clocks.
func Live(l *coordinationv1.Lease, now time.Time) bool {
	spec := l.Spec
	if spec.HolderIdentity == nil || *spec.HolderIdentity == "" || spec.LeaseDurationSeconds == nil {
		return false
	}
	last := spec.RenewTime
	if last == nil {
		last = spec.AcquireTime
	}
	if last == nil {
		return false
	}
	return now.Before(last.Add(time.Duration(*spec.LeaseDurationSeconds) * time.Second))
}
