package run

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/internal/identity"
	"github.com/kubecel/kubecel/internal/leader"
)

// LeaderOptions are the leader election flags of kubecel run.
type LeaderOptions struct {
	// Enabled runs the controller only while this process holds the Lease.
	Enabled bool
	// Explicit is set when --leader-elect was given: an explicit --leader-elect beside
	// --sharding or --dry-run is an error, the default gives way to them.
	Explicit bool
	// Options name the Lease and its timing; the name and namespace default to the
	// installation's.
	Options leader.Options
}

// resolve settles leader election against the other flags: the default gives way to
// --sharding and --dry-run, and the Lease defaults to the installation's name in the
// identity Secret's namespace, so that every process of one installation, in a cluster
// or outside, meets at the same Lease.
func (o *LeaderOptions) resolve(sharding, dryRun bool, id identity.Secret) error {
	switch {
	case o.Explicit && o.Enabled && dryRun:
		// Leader election creates and renews a Lease: a write, which a dry run never makes.
		return errors.New("--dry-run and --leader-elect cannot be combined: a dry run writes nothing, and leader election writes a Lease; run the dry run as a single replica")
	case o.Explicit && o.Enabled && sharding:
		return errors.New("--sharding and --leader-elect cannot be combined: with sharding every replica runs the controller for its share of the parents")
	case sharding || dryRun:
		o.Enabled = false
	}
	if o.Options.Namespace == "" {
		o.Options.Namespace = id.Namespace
	}
	if o.Options.ID == "" {
		o.Options.ID = id.Installation
	}
	if !o.Enabled {
		return nil
	}
	return o.Options.Validate()
}

// newLeader prepares leader election on cfg's cluster (see leader.New), or returns nil,
// which runs the controller unconditionally, when it is off.
func newLeader(o LeaderOptions, cfg *rest.Config, reg *prometheus.Registry) (*leader.Elector, error) {
	if !o.Enabled {
		return nil, nil
	}
	return leader.New(o.Options, cfg, reg)
}
