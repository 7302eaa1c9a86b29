package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	"k8s.io/klog/v2"
)

// alphaLoggingFlags need the LoggingAlphaOptions feature gate, which kubecel does not
// expose: they would only be refused, so they are hidden.
var alphaLoggingFlags = []string{"log-text-split-stream", "log-text-info-buffer-size", "log-json-split-stream", "log-json-info-buffer-size"}

// addLoggingFlags adds the logging flags of Kubernetes components
// (k8s.io/component-base/logs): --logging-format=text|json, -v, --vmodule and
// --log-flush-frequency.
func addLoggingFlags(fs *pflag.FlagSet) *logsapi.LoggingConfiguration {
	cfg := logsapi.NewLoggingConfiguration()
	logsapi.AddFlags(cfg, fs)
	for _, name := range alphaLoggingFlags {
		_ = fs.MarkHidden(name)
	}
	return cfg
}

// applyLogging sets up klog, through which client-go logs too, as the flags say, and
// returns ctx carrying the logger that the commands take from it. Every log line goes
// to stderr: stdout is for the commands' output. klog's setup is the process's, made
// once before anything logs.
func applyLogging(ctx context.Context, cfg *logsapi.LoggingConfiguration) (context.Context, error) {
	opts := &logsapi.LoggingOptions{ErrorStream: os.Stderr, InfoStream: os.Stderr}
	if err := logsapi.ValidateAndApplyWithOptions(cfg, opts, nil); err != nil {
		return ctx, fmt.Errorf("logging flags: %w", err)
	}
	return klog.NewContext(ctx, klog.Background()), nil
}
