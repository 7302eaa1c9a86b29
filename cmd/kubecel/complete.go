package main

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
	"github.com/kubecel/kubecel/rules"
)

// This file completes rules' names in the shell (kubecel completion): the rules of the
// --rules files already on the command line, else those the installation runs, read
// from its revisions in the cluster.

// completeTimeout bounds the cluster reads of one completion: a shell waits for it.
const completeTimeout = 5 * time.Second

// ruleNames is where a command's rules come from, for completion: files, when the
// command has a --rules flag and it is set, else the installation's revisions.
type ruleNames struct {
	files    *[]string
	cluster  *clikit.ClusterFlags
	identity *clikit.IdentityFlags
}

// complete returns a completion function of rules' names; single completes one name
// (a command's only argument), otherwise the names not yet on the line.
func (n ruleNames) complete(single bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if single && len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names, err := n.list(cmd.Context())
		if err != nil {
			cobra.CompDebugln("kubecel: rules' names: "+err.Error(), true)
			return nil, cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, name := range names {
			if strings.HasPrefix(name, toComplete) && !slices.Contains(args, name) {
				out = append(out, name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// list returns the rules' names, sorted.
func (n ruleNames) list(ctx context.Context) ([]string, error) {
	if n.files != nil && len(*n.files) > 0 {
		// Cobra may parse a completed line's flags twice: each --rules is once.
		var files []string
		for _, f := range *n.files {
			if !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
		rs, _, err := rulesfrom.LoadFiles(nil, files, "", rules.Options{})
		if err != nil {
			return nil, err
		}
		var names []string
		for _, r := range rs.Rules {
			names = append(names, r.Name)
		}
		slices.Sort(names)
		return names, nil
	}
	cfg, err := n.cluster.RESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "kubecel-completion"
	cfg.Timeout = completeTimeout
	store, err := rulesfrom.RevisionStore(cfg, n.identity, nil)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, completeTimeout)
	defer cancel()
	byRule, err := rulesfrom.ListRevisions(ctx, store)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(byRule)), nil
}

// completeOutputs makes shell completion offer the formats of every command's -o.
func completeOutputs(cmd *cobra.Command) {
	if f := cmd.Flags().Lookup("output"); f != nil {
		if o, ok := f.Value.(*clikit.OutputFlag); ok {
			_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(o.Formats, cobra.ShellCompDirectiveNoFileComp))
		}
	}
	for _, sub := range cmd.Commands() {
		completeOutputs(sub)
	}
}
