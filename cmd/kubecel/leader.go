package main

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/internal/identity"
	"github.com/kubecel/kubecel/internal/leader"
)

// leaderOptions are the leader election flags of `kubecel run`.
type leaderOptions struct {
	enabled bool
	// explicit is set when --leader-elect was given: an explicit --leader-elect beside
	// --sharding or --dry-run is an error, the default gives way to them.
	explicit bool
	opts     leader.Options
}

func (o *leaderOptions) addFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.enabled, "leader-elect", true, "run the controller only while holding the installation's Lease, so that one process of an installation writes and any other stands by (default on; off with --sharding or --dry-run)")
	f.StringVar(&o.opts.Namespace, "leader-elect-namespace", "", "namespace of the Lease (default: the identity Secret's namespace)")
	f.StringVar(&o.opts.ID, "leader-elect-id", "", "name of the Lease (default: the installation's name)")
	o.opts.Timing.AddFlags(f, "leader-elect")
}

// resolve settles leader election against the other flags: the default gives way to
// --sharding and --dry-run, and the Lease defaults to the installation's name in the
// identity Secret's namespace, so that every process of one installation, in a cluster
// or outside, meets at the same Lease.
func (o *leaderOptions) resolve(sharding, dryRun bool, id identity.Secret) error {
	switch {
	case o.explicit && o.enabled && dryRun:
		// Leader election creates and renews a Lease: a write, which a dry run never makes.
		return errors.New("--dry-run and --leader-elect cannot be combined: a dry run writes nothing, and leader election writes a Lease; run the dry run as a single replica")
	case o.explicit && o.enabled && sharding:
		return errors.New("--sharding and --leader-elect cannot be combined: with sharding every replica runs the controller for its share of the parents")
	case sharding || dryRun:
		o.enabled = false
	}
	if o.opts.Namespace == "" {
		o.opts.Namespace = id.Namespace
	}
	if o.opts.ID == "" {
		o.opts.ID = id.Installation
	}
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
