// Package controlplane starts a real, local Kubernetes control plane: etcd and
// kube-apiserver through controller-runtime's envtest and, when asked, either
// kube-controller-manager running only its garbage-collector and namespace controllers
// (Options.ControllerManager), or everything a cluster runs so that workloads run
// (Options.Full): kube-controller-manager with a cluster's controllers, kube-scheduler,
// and KWOK simulating a few nodes, their kubelets and a volume provisioner with the
// stages of stages.yaml, so that Pods are scheduled and turn Ready, Deployments become
// Available and Jobs complete. Only the nodes are simulated; every controller is the
// real one.
//
// The binaries come from bin/ (built by `make controlplane` from pinned upstream modules).
// Every process listens on free loopback ports and keeps its state in one temporary
// directory. Stop ends every process and removes that directory; a watchdog also kills
// them if the owning process dies without calling Stop (a panicking test binary, a
// SIGKILL), so no etcd or apiserver is ever left behind.
//
// The same package serves the integration tests (minimal unless a test asks for more)
// and `kubecel dev` (full unless asked for less).
package controlplane
