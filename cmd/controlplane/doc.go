// Package controlplane is a nested Go module that builds the local Kubernetes control
// plane (kube-apiserver, kube-controller-manager, etcd) from pinned upstream modules.
// It is separate from kubecel's own go.mod so that the product never depends on
// k8s.io/kubernetes. Build it with `make controlplane`; the binaries land in bin/.
package controlplane
