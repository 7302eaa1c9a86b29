package main

import (
	"github.com/spf13/cobra"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "kubecel",
		Short: "A generic Kubernetes controller driven by CEL rules",
		Long: `kubecel serves any number of parent resources (CRDs or built-in kinds) from one rules
file: CEL expressions compute each parent's desired children and status, and a generic
reconcile loop applies them with server-side apply, prunes what is no longer wanted,
repairs drift and reports status.`,
		Example: `  # try rules offline: check them, then print what they make of a parent
  kubecel check --rules rules.yaml --crds crds/
  kubecel render --rules rules.yaml --crds crds/ -f parents.yaml

  # see what they would change in a cluster, then run them there
  kubecel plan --rules rules.yaml
  kubecel run --rules rules.yaml`,
		Version:       readBuildInfo().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(flagError)
	root.SetVersionTemplate("{{.Version}}\n")
	root.Flags().Bool("version", false, "print the version and exit (as kubecel version does)")
	logging := addLoggingFlags(root.PersistentFlags())
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		// Logs go through klog's contextual logger; commands take it from ctx.
		ctx, err := applyLogging(cmd.Context(), logging)
		cmd.SetContext(ctx)
		return err
	}
	root.AddCommand(
		newDevCommand(),
		newRBACCommand(),
		newRunCommand(),
		newRenderCommand(),
		newCheckCommand(),
		newCRDCommand(),
		newImportCommand(),
		newTestCommand(),
		newPlanCommand(),
		newTraceCommand(),
		newGetCommand(),
		newRolloutCommand(),
		newVersionCommand(),
	)
	completeOutputs(root)
	return root
}
