package rulesfrom

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/identity"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/internal/rulesource"
	"github.com/kubecel/kubecel/rules"
)

// Where trace and plan read the rules. Given sources win: --rules files and
// directories, --rules-configmap and --rules-configmap-selector (read once, as run reads
// them at its start), joined in that order as run joins them. Without any, the rules are
// those the installation runs: its rules' current revisions, stored in the cluster and
// proven with its key (runningrules.go).

// Flags are the flags that name the rules of a command that reads a cluster.
type Flags struct {
	// Files are the --rules files and directories (- for the standard input).
	Files []string
	// ConfigMap is --rules-configmap NAMESPACE/NAME.
	ConfigMap string
	// Selector is --rules-configmap-selector NAMESPACE/SELECTOR.
	Selector string
}

// AddFlags adds --rules, --rules-configmap and --rules-configmap-selector.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.Files, "rules", nil, "rules file, or directory (its *.yaml files, sorted), or - for the standard input; repeatable, all load as one rule set (default: the rules the installation runs, from its stored revisions)")
	fs.StringVar(&f.ConfigMap, "rules-configmap", "", "NAMESPACE/NAME of a ConfigMap whose keys ending in .yaml hold rules, read once as run reads it (instead of the installation's revisions)")
	fs.StringVar(&f.Selector, "rules-configmap-selector", "", "NAMESPACE/SELECTOR: every ConfigMap of NAMESPACE whose labels match SELECTOR holds rules in its keys ending in .yaml, read once as run reads them (instead of the installation's revisions)")
}

// Running reports whether the rules are the installation's running revisions: no
// source was given.
func (f *Flags) Running() bool {
	return len(f.Files) == 0 && f.ConfigMap == "" && f.Selector == ""
}

// Loaded are the rules a command evaluates, and where they came from.
type Loaded struct {
	// Set is the rules, loaded.
	Set *rules.RuleSet
	// From names where the rules came from, in messages and in the output: paths, "configmap
	// NS/NAME", or the installation's revisions.
	From string
	// Cluster is true when they were read from the cluster: the text output then says
	// where from, on its first line.
	Cluster bool
	// Running is the revisions of each rule, when the rules are the installation's
	// running revisions; id is then the installation's identity, already read.
	Running map[string]*RunningRule
	id      *rules.Identity
}

// Header is the first line of a text output that reads the rules from the cluster, ""
// otherwise.
func (l *Loaded) Header() string {
	if !l.Cluster {
		return ""
	}
	return "rules: " + l.From
}

// Env is what loading the rules of a command takes.
type Env struct {
	// Stdin is read for --rules -.
	Stdin io.Reader
	// Config connects to the cluster, for ConfigMaps and revisions.
	Config *rest.Config
	// Options load the rules (limits, CRD schemas).
	Options rules.Options
	// Identity names the installation whose revisions are read.
	Identity *clikit.IdentityFlags
	// Warn receives what the command should say on stderr: a ConfigMap of a selector left
	// out, as the controller leaves it out.
	Warn func(string)
}

// Load reads and loads the rules the flags name.
func (f *Flags) Load(ctx context.Context, env Env) (*Loaded, error) {
	if f.Running() {
		return loadRunning(ctx, env)
	}
	// The caller has checked the --rules paths (CheckPaths) before connecting.
	sources, err := Sources(env.Stdin, f.Files, f.ConfigMap, f.Selector, env.Config)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(sources))
	for i, s := range sources {
		names[i] = s.String()
	}
	l := &Loaded{From: strings.Join(names, ", "), Cluster: f.ConfigMap != "" || f.Selector != ""}
	if !l.Cluster {
		// Files alone load as check and render load them, every problem with its place.
		l.From = Name(f.Files)
		docs, err := rulesource.Read(sources...)
		if err != nil {
			return nil, err
		}
		l.Set, err = rules.LoadDocuments(docs, env.Options)
		return l, err
	}
	l.Set, err = rulesource.LoadOnce(ctx, sources, env.Options, func(source string, err error) {
		if env.Warn != nil {
			env.Warn(fmt.Sprintf("warning: %s is left out, as the controller leaves it out: %v", source, err))
		}
	})
	return l, err
}

// RevisionStore is the store of the installation's revisions, in the namespace of its
// identity Secret; signer checks the proofs of what it reads.
func RevisionStore(cfg *rest.Config, idf *clikit.IdentityFlags, signer rollout.Signer) (*rollout.Store, error) {
	ref, err := idf.SecretRef()
	if err != nil {
		return nil, err
	}
	if err := rules.CheckInstallation(ref.Installation); err != nil {
		return nil, fmt.Errorf("--installation: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &rollout.Store{Client: kube, Namespace: ref.Namespace, Installation: ref.Installation, Signer: signer}, nil
}

// Identity reads the installation's key, read-only, once per command: loading the
// running revisions has read it already.
func (l *Loaded) Identity(ctx context.Context, cfg *rest.Config, idf *clikit.IdentityFlags) (*rules.Identity, error) {
	if l.id != nil {
		return l.id, nil
	}
	id, err := idf.Load(ctx, cfg, identity.ReadOnly, false)
	if err != nil {
		return nil, err
	}
	l.id = id
	return id, nil
}
