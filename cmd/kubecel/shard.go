package main

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/identity"
	"github.com/kubecel/kubecel/internal/leader"
	"github.com/kubecel/kubecel/internal/serve"
	"github.com/kubecel/kubecel/internal/shard"
)

// shardOptions are the sharding flags of `kubecel run`.
type shardOptions struct {
	enabled bool
	opts    shard.Options
}

func (o *shardOptions) addFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.enabled, "sharding", false, "run active-active: the parents are spread over every replica that holds a membership Lease in the ring (not with --leader-elect)")
	f.StringVar(&o.opts.Ring, "sharding-ring", "", "name of the ring: the label kubecel.dev/ring on its members' Leases (default: the installation's name)")
	f.StringVar(&o.opts.Namespace, "sharding-namespace", "", "namespace of the membership Leases (default: the identity Secret's namespace)")
	o.opts.Timing.AddFlags(f, "sharding")
}

// resolve gives the ring its defaults, the installation's name in the identity
// Secret's namespace (where its leader election Lease is too), and checks the flags
// when sharding is on.
func (o *shardOptions) resolve(id identity.Secret) error {
	if o.opts.Ring == "" {
		o.opts.Ring = id.Installation
	}
	if o.opts.Namespace == "" {
		o.opts.Namespace = id.Namespace
	}
	if !o.enabled {
		return nil
	}
	return o.opts.Validate()
}

// newMember prepares membership of the ring (see shard.New), or returns nil when
// sharding is off.
func newMember(o shardOptions, cfg *rest.Config, reg *prometheus.Registry) (*shard.Member, error) {
	if !o.enabled {
		return nil, nil
	}
	return shard.New(o.opts, cfg, reg)
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
