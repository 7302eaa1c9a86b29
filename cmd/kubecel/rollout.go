package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/identity"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/rules"
)

func newRolloutCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Show and steer the progressive rollouts of a rule's revisions",
		Long: `Each edit of a rule that has a rollout policy makes a new revision of the rule, which
the controller rolls out to the rule's parents step by step. The revisions are
ControllerRevisions in kubecel's namespace (the namespace of the identity Secret),
labelled with the installation and the rule; the highest-numbered is the current one.

  status    the current revision, its phase and step, and where the parents are
  history   every stored revision of the rule
  pause     stop a rollout under way from taking further steps
  resume    let a paused rollout go on
  undo      send every parent back to the revision the current one rolled from

The commands read and write only the revisions (and status lists the parents); they
never read the installation's key.`,
		Example: `  kubecel rollout status webapp
  kubecel rollout pause webapp
  kubecel rollout undo webapp`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return &clikit.UsageError{Msg: "give a subcommand: status, history, pause, resume or undo", Command: cmd.CommandPath()}
		},
	}
	cmd.AddCommand(newRolloutStatusCommand(), newRolloutHistoryCommand(),
		newRolloutOpCommand(pauseOp), newRolloutOpCommand(resumeOp), newRolloutOpCommand(undoOp))
	return cmd
}

// rolloutOptions are what every rollout subcommand takes: the cluster and the
// installation whose revisions it reads.
type rolloutOptions struct {
	cluster  *clikit.ClusterFlags
	identity clikit.IdentityFlags
}

// ruleNames completes the names of the rules the installation runs.
func (o *rolloutOptions) ruleNames() ruleNames {
	return ruleNames{cluster: o.cluster, identity: &o.identity}
}

func (o *rolloutOptions) addFlags(f *pflag.FlagSet) {
	o.cluster = clikit.NewClusterFlags()
	o.cluster.AddFlags(f, "kubeconfig file (default: $KUBECONFIG, ~/.kube/config or in-cluster)")
	o.identity.AddFlags(f)
	f.Lookup("identity-secret").Usage = "NAMESPACE/NAME of the installation's identity Secret: the revisions are in its namespace, and their proofs are checked with its key; pause, resume and undo sign the state they write with it (default: <installation>-identity in the pod's namespace in a cluster, kubecel-system outside one)"
}

// ruleArg checks that a subcommand was given one rule.
func ruleArg(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return &clikit.UsageError{Msg: "give the rule's name: " + cmd.CommandPath() + " RULE", Command: cmd.CommandPath()}
	case len(args) > 1:
		return &clikit.UsageError{Msg: fmt.Sprintf("give one rule, not %d (%s)", len(args), strings.Join(args, " ")), Command: cmd.CommandPath()}
	}
	return nil
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
func (o *rolloutOptions) connect(ctx context.Context, sign bool) (*rolloutClient, error) {
	ref, err := o.identity.SecretRef()
	if err != nil {
		return nil, err
	}
	if err := rules.CheckInstallation(ref.Installation); err != nil {
		return nil, fmt.Errorf("--installation: %w", err)
	}
	cfg, err := o.cluster.RESTConfig()
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
		id, err := o.identity.Load(ctx, cfg, identity.Required, false)
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
