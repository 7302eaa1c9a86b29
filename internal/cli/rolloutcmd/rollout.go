package rolloutcmd

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/identity"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/rules"
)

// Options are what every rollout subcommand takes: the cluster and the
// installation whose revisions it reads.
type Options struct {
	// Cluster connects to the cluster the revisions are in.
	Cluster *clikit.ClusterFlags
	// Identity names the installation and its identity Secret, in whose namespace the
	// revisions are.
	Identity clikit.IdentityFlags
}

// rolloutClient reaches the cluster for a rollout subcommand.
type rolloutClient struct {
	cfg   *rest.Config
	store *rollout.Store
}

// connect checks the flags, reaches the API server and makes the store of the
// installation's revisions; with sign, it reads the installation's key from its identity
// Secret, which must exist, to sign the states it writes (status and history read no
// Secret).
func (o *Options) connect(ctx context.Context, sign bool) (*rolloutClient, error) {
	ref, err := o.Identity.SecretRef()
	if err != nil {
		return nil, err
	}
	if err := rules.CheckInstallation(ref.Installation); err != nil {
		return nil, fmt.Errorf("--installation: %w", err)
	}
	cfg, err := o.Cluster.RESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "kubecel-rollout"
	if err := clikit.Reach(cfg); err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	store := &rollout.Store{Client: kube, Namespace: ref.Namespace, Installation: ref.Installation}
	if sign {
		id, err := o.Identity.Load(ctx, cfg, identity.Required, false)
		if err != nil {
			return nil, err
		}
		store.Signer = id
	}
	return &rolloutClient{cfg: cfg, store: store}, nil
}

// current reads a rule's revisions and its current one; a rule without any is an error
// that says where kubecel looked.
func (c *rolloutClient) current(ctx context.Context, rule string) ([]*rollout.Revision, *rollout.Revision, error) {
	revs, err := c.store.List(ctx, rule)
	if err != nil {
		return nil, nil, err
	}
	cur := rollout.Current(revs)
	if cur == nil {
		return nil, nil, fmt.Errorf("rule %q has no revision in namespace %s for installation %q: the rule never ran there, or runs under another installation (--installation, --identity-secret)",
			rule, c.store.Namespace, c.store.Installation)
	}
	return revs, cur, nil
}
