package main

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/internal/leader"
)

// leaderOptions are the leader election flags of `kubecel run`.
type leaderOptions struct {
	enabled bool
	opts    leader.Options
}

func (o *leaderOptions) addFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.enabled, "leader-elect", false, "run the controller only while holding a Lease, so that one of several replicas writes")
	f.StringVar(&o.opts.Namespace, "leader-elect-namespace", "", "namespace of the Lease (default: the pod's namespace in a cluster, kubecel-system outside one)")
	f.StringVar(&o.opts.ID, "leader-elect-id", "kubecel", "name of the Lease")
	f.DurationVar(&o.opts.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a standby waits after the leader's last renewal before taking over")
	f.DurationVar(&o.opts.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it gives up, stops and exits; also how long after its last renewal it may write")
	f.DurationVar(&o.opts.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "how often to try to acquire or renew the Lease")
}

// newLeader prepares leader election on cfg's cluster (see leader.New), or returns nil,
// which runs the controller unconditionally, when it is off.
func newLeader(o leaderOptions, cfg *rest.Config, reg *prometheus.Registry) (*leader.Elector, error) {
	if !o.enabled {
		return nil, nil
	}
	return leader.New(o.opts, cfg, reg)
}
