// Command kubecel is a generic Kubernetes controller driven by a rules file: CEL
// expressions compute each parent resource's desired children and status.
// See `kubecel --help` and the README.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/internal/cli/clikit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand().ExecuteContext(ctx)
	stop()
	klog.Flush()
	os.Exit(exitCode(err))
}

// exitCode maps a command's error to the process exit code, printing the error.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *clikit.ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintln(os.Stderr, "Error:", ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintln(os.Stderr, "Error:", err)
	var usage *clikit.UsageError
	if errors.As(err, &usage) {
		fmt.Fprintln(os.Stderr, usage.Hint())
	}
	return 1
}

// streamsOf returns where a command reads and writes: its input, output and error
// output (os.Stdin, os.Stdout and os.Stderr unless a test set them).
func streamsOf(cmd *cobra.Command) clikit.Streams {
	return clikit.Streams{In: cmd.InOrStdin(), Out: cmd.OutOrStdout(), ErrOut: cmd.ErrOrStderr()}
}
