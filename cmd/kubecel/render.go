package main

import (
	"github.com/spf13/cobra"

	"github.com/kubecel/kubecel/internal/cli/render"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
)

func newRenderCommand() *cobra.Command {
	var o render.Options
	cmd := &cobra.Command{
		Use:   "render --rules FILE -f PARENTS [-f OBSERVED]... [-o yaml|json] [--crds DIR]",
		Short: "Print the children and status that the rules compute for parents, offline",
		Long: `render evaluates the rules for parent objects without a cluster and prints the
children exactly as the controller would apply them (namespace, kubecel's labels and
annotation, owner reference) and the status it would write.

The first -f file holds the parents (one or several YAML documents). A parent without
metadata.uid gets the placeholder <parent-uid> where the API server's UID would be, and
the kubecel.dev/proof annotation, which only the installation's key makes, is <proof>.
Every further -f file holds observed objects (multi-document YAML): the children as they
exist, so that readyWhen, children.<id> and the status fields that read children can be
tried. An observed object belongs to the child named by its kubecel.dev/child label
(objects labelled for another parent are left out), or else to the desired child with
the same kind and name.

The rules that apply are those whose parent resource matches the parent's apiVersion and
kind, and whose namespaces and selector admit it. With --crds, the kind is mapped to its
resource by the CRDs (and expressions are type-checked against their schemas);
without, the resource is guessed as the lowercase plural of the kind (WebApp -> webapps,
Policy -> policies), as kubectl does for unknown kinds.

Output (-o yaml, the default) is one YAML document per child, each under a comment that
names its rule and child, then for each rule with a status block a document with the
parent's status. -o json prints the same documents as a v1 List. Secret data is
redacted. Exit status 1 when the rules do not load or an expression fails.

--rules may be given several times and may name a directory (its *.yaml files, sorted):
all load as one rule set. A file given as - is the standard input: --rules - reads the
rules from it, -f - the parents or observed objects (one of them only).`,
		Example: `  # the children and status of each parent of a file
  kubecel render --rules rules.yaml -f parents.yaml

  # with the children as they exist, and the CRDs that default and check the parents
  kubecel render --rules rules.yaml --crds crds/ -f parents.yaml -f observed.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return render.Run(cmd.Context(), &o, streamsOf(cmd)) },
	}
	rulesfrom.AddRulesFlag(cmd.Flags(), &o.Rules)
	cmd.Flags().StringArrayVarP(&o.Files, "filename", "f", nil, "the parent objects, then files of observed children (repeatable; - for the standard input)")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "yaml", "output format: yaml or json")
	cmd.Flags().StringVar(&o.CRDs, "crds", "", "directory of CustomResourceDefinition manifests, for kind-to-resource mapping and type checking")
	o.Limits.AddFlags(cmd.Flags())
	_ = cmd.MarkFlagRequired("rules")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}
