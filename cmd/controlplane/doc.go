// Package controlplane is a nested Go module that builds the local Kubernetes control
// plane (kube-apiserver, kube-controller-manager, kube-scheduler) from the pinned
// k8s.io/kubernetes module; etcd and kwok (the simulated nodes) are nested modules of
// their own. It is separate from kubecel's own go.mod so that the product never depends
// on k8s.io/kubernetes. Build it with `make controlplane`; the binaries land in bin/.
package controlplane
