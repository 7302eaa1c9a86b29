package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
	"github.com/kubecel/kubecel/rules/apischema"
)

type crdOptions struct {
	rules  []string
	rule   string
	output clikit.OutputFlag
	limits clikit.LoadLimits
}

func newCRDCommand() *cobra.Command {
	var o crdOptions
	cmd := &cobra.Command{
		Use:   "crd --rules FILE|DIR... [--rule NAME] [-o yaml|json]",
		Short: "Print the CustomResourceDefinitions that the rules' api blocks define",
		Long: `crd loads the rules (as check does, offline) and prints the CustomResourceDefinition
that each rule with an api block defines: the one the controller applies before it
starts the rule, as multi-document YAML (one document per rule, under a comment naming
it), or with -o json as a v1 List. It is for those who apply CRDs themselves (GitOps):
the controller runs a rule whose CRD exists as the rules define it, and never changes a
CRD it did not create.

--rules may be given several times and may name a directory (its *.yaml files, sorted);
--rules - reads the rules from the standard input. --rule prints one rule's CRD. Exit
status 1 when the rules do not load, or no rule (or not the one named) has an api block.`,
		Example: `  kubecel crd --rules rules.yaml > crds.yaml
  kubectl apply --server-side -f crds.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	rulesfrom.AddRulesFlag(cmd.Flags(), &o.rules)
	cmd.Flags().StringVar(&o.rule, "rule", "", "print only this rule's CRD")
	o.output.AddFlag(cmd.Flags(), "yaml", "json")
	o.limits.AddFlags(cmd.Flags())
	_ = cmd.MarkFlagRequired("rules")
	return cmd
}

func (o *crdOptions) run(stdin io.Reader, stdout io.Writer) error {
	rs, _, err := rulesfrom.LoadFiles(stdin, o.rules, "", o.limits.Options())
	if err != nil {
		return &clikit.ExitError{Code: 1, Err: err}
	}
	type doc struct {
		rule string
		obj  map[string]any
	}
	var docs []doc
	found := false
	for _, r := range rs.Rules {
		if o.rule != "" && r.Name != o.rule {
			continue
		}
		found = true
		if crd := r.CRD(); crd != nil {
			obj, err := apischema.Manifest(crd)
			if err != nil {
				return err
			}
			docs = append(docs, doc{rule: r.Name, obj: obj})
		}
	}
	file := rulesfrom.Name(o.rules)
	switch {
	case o.rule != "" && !found:
		return &clikit.ExitError{Code: 1, Err: fmt.Errorf("%s has no rule %q", file, o.rule)}
	case len(docs) == 0 && o.rule != "":
		return &clikit.ExitError{Code: 1, Err: fmt.Errorf("rule %q has no api block: it names an existing resource", o.rule)}
	case len(docs) == 0:
		return &clikit.ExitError{Code: 1, Err: errors.New(file + ": no rule has an api block")}
	}
	if o.output.Value == "json" {
		list := map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{}}
		for _, d := range docs {
			list["items"] = append(list["items"].([]any), d.obj)
		}
		return clikit.PrintData(stdout, "json", list)
	}
	for i, d := range docs {
		if i > 0 {
			fmt.Fprintln(stdout, "---")
		}
		data, err := yaml.Marshal(d.obj)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "# the api of rule %q\n%s", d.rule, data)
	}
	return nil
}
