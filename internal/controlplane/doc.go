// Package controlplane starts a real, local Kubernetes control plane: etcd and
// kube-apiserver through controller-runtime's envtest, and, when asked,
// kube-controller-manager running only its garbage-collector and namespace controllers.
//
// The binaries come from bin/ (built by `make controlplane` from pinned upstream modules).
// Every process listens on free loopback ports and keeps its state in one temporary
// directory. Stop ends every process and removes that directory; a watchdog also kills
// them if the owning process dies without calling Stop (a panicking test binary, a
// SIGKILL), so no etcd or apiserver is ever left behind.
//
// The same package serves the integration tests and `kubecel dev`.
package controlplane
