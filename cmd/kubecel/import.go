package main

import (
	"github.com/spf13/cobra"

	"github.com/kubecel/kubecel/internal/cli/importkro"
)

func newImportCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Convert definitions of other tools into kubecel rules",
		Example: `  # a kro ResourceGraphDefinition into a rules file, then check it
  kubecel import kro webapp-rgd.yaml > rules.yaml
  kubecel check --rules rules.yaml`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newImportKroCommand())
	return cmd
}

func newImportKroCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "kro RGD.yaml",
		Short: "Convert a kro ResourceGraphDefinition into a rules file",
		Long: `import kro converts a kro ResourceGraphDefinition into a rules file with one rule,
printed on the standard output. The definition's schema (SimpleSchema: spec, types,
validation, printer columns) becomes the rule's api block; each resource with a
template becomes a child, with includeWhen as when, readyWhen as readyWhen (the resource
is self there) and a forEach of one iterator as forEach (the iterator is each); each
externalRef becomes a ref; the schema's status fields become the rule's status fields,
declared in the api with the type of what they read where it is known (a built-in
kind's field, a spec field), and as string otherwise. kro's expressions are rewritten
for kubecel's variables: schema is parent, a resource is children.ID, an external
reference refs.ID.

What it cannot convert (a forEach of several iterators, nested status objects, fields
it does not know) is left out, and said on the standard error, one note a line, and in
comments at the top of the output. The converted rules are loaded as check loads them:
exit status 1 with the errors when they do not load (the rules are still printed), or
when the file is not a ResourceGraphDefinition.`,
		Example: `  kubecel import kro webapp-rgd.yaml > rules.yaml
  kubecel check --rules rules.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return importkro.Run(args[0], streamsOf(cmd))
		},
	}
}
