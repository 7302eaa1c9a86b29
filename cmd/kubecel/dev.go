package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubecel/kubecel/internal/controlplane"
)

type devOptions struct {
	dir    string
	binDir string
}

func newDevCommand() *cobra.Command {
	var o devOptions
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local control plane (etcd, kube-apiserver, kube-controller-manager) until Ctrl-C",
		Long: `dev starts a local Kubernetes control plane from the binaries built by
'make controlplane' (etcd and kube-apiserver, plus kube-controller-manager for garbage
collection and namespace deletion), prints the kubeconfig to use with kubectl, and runs
until interrupted. Ctrl-C stops every process.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	cmd.Flags().StringVar(&o.dir, "dir", "", "state directory (replaced at start and kept at exit); default a temporary directory removed at exit")
	cmd.Flags().StringVar(&o.binDir, "bin-dir", "", "directory with etcd, kube-apiserver and kube-controller-manager (default: $"+controlplane.BinDirEnv+", next to kubecel, or ./bin)")
	return cmd
}

func (o *devOptions) run(cmd *cobra.Command) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	start := time.Now()
	fmt.Fprintln(out, "Starting the local control plane (etcd, kube-apiserver, kube-controller-manager)...")
	cp, err := controlplane.Start(ctx, controlplane.Options{BinDir: o.binDir, Dir: o.dir, ControllerManager: true})
	if err != nil {
		return err
	}
	defer cp.Stop()
	fmt.Fprintf(out, "Control plane ready in %s.\n\n", time.Since(start).Round(100*time.Millisecond))
	fmt.Fprintf(out, "Kubeconfig: %s\n", cp.Kubeconfig)
	fmt.Fprintf(out, "Try:        kubectl --kubeconfig %s get namespaces\n", cp.Kubeconfig)
	fmt.Fprintf(out, "Logs:       %s/*.log\n\n", cp.Dir)
	fmt.Fprintln(out, "Press Ctrl-C to stop.")
	<-ctx.Done()
	fmt.Fprintln(out, "\nStopping...")
	return cp.Stop()
}
