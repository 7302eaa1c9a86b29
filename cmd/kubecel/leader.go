package main

import (
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
	o.opts.Timing.AddFlags(f, "leader-elect")
}

// validate checks the flags when leader election is on.
func (o leaderOptions) validate() error {
	if !o.enabled {
		return nil
	}
	return o.opts.Validate()
}

// newLeader prepares leader election on cfg's cluster (see leader.New), or returns nil,
// which runs the controller unconditionally, when it is off.
func newLeader(o leaderOptions, cfg *rest.Config, reg *prometheus.Registry) (*leader.Elector, error) {
	if !o.enabled {
		return nil, nil
	}
	return leader.New(o.opts, cfg, reg)
}
