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

	"k8s.io/klog/v2"
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
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "Error:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "Error:", err)
	var usage *usageError
	if errors.As(err, &usage) {
		fmt.Fprintln(os.Stderr, usage.hint())
	}
	return 1
}
