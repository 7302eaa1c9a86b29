// Package check parses every PromQL expression of kubecel's dashboard and alerts (in
// deploy/monitoring) with Prometheus's own parser, and keeps deploy/monitoring/metrics.txt,
// the metrics they read, current; a testscript of cmd/kubecel checks that the running
// binary serves every one of them.
//
// It is a module of its own so that the Prometheus parser and what it pulls in stay out
// of kubecel's module: `make test` runs its test.
package check
