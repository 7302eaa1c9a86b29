// Package buildinfo says which kubecel this is: the version, VCS revision, local
// changes and Go version that the Go toolchain recorded in the binary, with what the
// linker stamped into package main as the fallback. It is the logic of kubecel version
// and of the kubecel_build_info metric of kubecel run.
package buildinfo
