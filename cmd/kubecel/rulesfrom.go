package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

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

// rulesFromFlags are the flags that name the rules of a command that reads a cluster.
type rulesFromFlags struct {
	files     []string
	configMap string
	selector  string
}

func (f *rulesFromFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.files, "rules", nil, "rules file, or directory (its *.yaml files, sorted), or - for the standard input; repeatable, all load as one rule set (default: the rules the installation runs, from its stored revisions)")
	fs.StringVar(&f.configMap, "rules-configmap", "", "NAMESPACE/NAME of a ConfigMap whose keys ending in .yaml hold rules, read once as run reads it (instead of the installation's revisions)")
	fs.StringVar(&f.selector, "rules-configmap-selector", "", "NAMESPACE/SELECTOR: every ConfigMap of NAMESPACE whose labels match SELECTOR holds rules in its keys ending in .yaml, read once as run reads them (instead of the installation's revisions)")
}

// running reports whether the rules are the installation's running revisions: no
// source was given.
func (f *rulesFromFlags) running() bool {
	return len(f.files) == 0 && f.configMap == "" && f.selector == ""
}

// loadedRules are the rules a command evaluates, and where they came from.
type loadedRules struct {
	rs *rules.RuleSet
	// from names where the rules came from, in messages and in the output: paths, "configmap
	// NS/NAME", or the installation's revisions.
	from string
	// cluster is true when they were read from the cluster: the text output then says
	// where from, on its first line.
	cluster bool
	// running is the revisions of each rule, when the rules are the installation's
	// running revisions; id is then the installation's identity, already read.
	running map[string]*runningRule
	id      *rules.Identity
}

// header is the first line of a text output that reads the rules from the cluster, ""
// otherwise.
func (l *loadedRules) header() string {
	if !l.cluster {
		return ""
	}
	return "rules: " + l.from
}

// loadEnv is what loading the rules of a command takes.
type loadEnv struct {
	stdin    io.Reader
	cfg      *rest.Config
	opts     rules.Options
	identity *identityFlags
	// warn receives what the command should say on stderr: a ConfigMap of a selector left
	// out, as the controller leaves it out.
	warn func(string)
}

// load reads and loads the rules the flags name.
func (f *rulesFromFlags) load(ctx context.Context, env loadEnv) (*loadedRules, error) {
	if f.running() {
		return loadRunning(ctx, env)
	}
	// The caller has checked the --rules paths (checkRulesPaths) before connecting.
	sources, err := ruleSources(env.stdin, f.files, f.configMap, f.selector, env.cfg)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(sources))
	for i, s := range sources {
		names[i] = s.String()
	}
	l := &loadedRules{from: strings.Join(names, ", "), cluster: f.configMap != "" || f.selector != ""}
	if !l.cluster {
		// Files alone load as check and render load them, every problem with its place.
		l.from = rulesName(f.files)
		docs, err := rulesource.Read(sources...)
		if err != nil {
			return nil, err
		}
		l.rs, err = rules.LoadDocuments(docs, env.opts)
		return l, err
	}
	l.rs, err = rulesource.LoadOnce(ctx, sources, env.opts, func(source string, err error) {
		if env.warn != nil {
			env.warn(fmt.Sprintf("warning: %s is left out, as the controller leaves it out: %v", source, err))
		}
	})
	return l, err
}

// revisionStore is the store of the installation's revisions, in the namespace of its
// identity Secret; signer checks the proofs of what it reads.
func revisionStore(cfg *rest.Config, idf *identityFlags, signer rollout.Signer) (*rollout.Store, error) {
	ref, err := idf.secretRef()
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

// identity reads the installation's key, read-only, once per command: loading the
// running revisions has read it already.
func (l *loadedRules) identity(ctx context.Context, cfg *rest.Config, idf *identityFlags) (*rules.Identity, error) {
	if l.id != nil {
		return l.id, nil
	}
	id, err := idf.load(ctx, cfg, identity.ReadOnly, false)
	if err != nil {
		return nil, err
	}
	l.id = id
	return id, nil
}
