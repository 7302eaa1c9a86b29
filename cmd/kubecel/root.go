package main

import (
	"flag"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "kubecel",
		Short: "A generic Kubernetes controller driven by CEL rules",
		Long: `kubecel serves any number of parent resources (CRDs or built-in kinds) from one rules
file: CEL expressions compute each parent's desired children and status, and a generic
reconcile loop applies them with server-side apply, prunes what is no longer wanted,
repairs drift and reports status.`,
		Version:       readBuildInfo().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			// Logs go through klog's contextual logger; commands take it from ctx.
			cmd.SetContext(klog.NewContext(cmd.Context(), klog.Background()))
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.Flags().Bool("version", false, "print the version and exit (as kubecel version does)")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	root.PersistentFlags().AddGoFlag(klogFlags.Lookup("v"))
	root.AddCommand(
		newDevCommand(),
		newRBACCommand(),
		newRunCommand(),
		newRenderCommand(),
		newCheckCommand(),
		newPlanCommand(),
		newVersionCommand(),
	)
	return root
}
