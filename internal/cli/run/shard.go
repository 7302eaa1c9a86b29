package run

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/identity"
	"github.com/kubecel/kubecel/internal/leader"
	"github.com/kubecel/kubecel/internal/serve"
	"github.com/kubecel/kubecel/internal/shard"
)

// ShardOptions are the sharding flags of kubecel run.
type ShardOptions struct {
	// Enabled runs the controller active-active, for this member's share of the ring.
	Enabled bool
	// Options name the ring and its Leases' namespace and timing; the ring and the
	// namespace default to the installation's.
	Options shard.Options
}

// resolve gives the ring its defaults, the installation's name in the identity
// Secret's namespace (where its leader election Lease is too), and checks the flags
// when sharding is on.
func (o *ShardOptions) resolve(id identity.Secret) error {
	if o.Options.Ring == "" {
		o.Options.Ring = id.Installation
	}
	if o.Options.Namespace == "" {
		o.Options.Namespace = id.Namespace
	}
	if !o.Enabled {
		return nil
	}
	return o.Options.Validate()
}

// newMember prepares membership of the ring (see shard.New), or returns nil when
// sharding is off.
func newMember(o ShardOptions, cfg *rest.Config, reg *prometheus.Registry) (*shard.Member, error) {
	if !o.Enabled {
		return nil, nil
	}
	return shard.New(o.Options, cfg, reg)
}

// leave deletes the member's Lease once the controller has stopped, so that the other
// replicas take its parents over at once.
func leave(ctx context.Context, m *shard.Member) {
	if m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := m.Leave(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot delete the membership Lease; the other replicas take over once it expires")
	}
}

// readiness is /readyz: the running controller's readiness (not ready before it
// exists). A standby is ready: waiting is its job, and a rolling update waits for new
// pods to be ready, so a standby that said otherwise would stall every rollout. A
// sharded replica is ready once it serves a ring the members agreed on, and says which.
func readiness(elected *leader.Elector, member *shard.Member, running *atomic.Pointer[engine.Controller]) func() serve.Readiness {
	return func() serve.Readiness {
		if elected.Standby() {
			ready, note := elected.Status()
			return serve.Readiness{Ready: ready, Notes: []string{note}}
		}
		var r serve.Readiness
		if ctrl := running.Load(); ctrl != nil {
			r.Ready, r.Pending = ctrl.Ready()
		}
		if member != nil {
			serving, note := member.Status()
			r.Ready = r.Ready && serving
			r.Notes = []string{note}
		}
		return r
	}
}
