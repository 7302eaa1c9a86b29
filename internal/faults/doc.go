// Package faults is the fault-injection suite: it runs the real local control plane
// (package controlplane) and `kubecel run` as a separate process, then breaks things the
// way clusters do — lost watches, compacted etcd history, a restarted kube-apiserver,
// SIGKILLed controllers, write conflicts, foreign field managers, runaway CEL, parents
// steering children into other namespaces, CRDs deleted under a running rule — and checks
// that the controller converges afterwards without orphans, duplicates or stuck finalizers.
//
// The package holds tests and the one helper they need that is worth reading on its own:
// Proxy, a loopback TCP proxy that can cut every connection. `go test ./internal/faults`
// runs short faults (a few seconds each); `-faults.long` (make test-faults) runs them for
// the durations the scenarios are specified with.
package faults
