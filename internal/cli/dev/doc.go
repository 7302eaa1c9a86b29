// Package dev is the logic of kubecel dev: it starts a local control plane
// (internal/controlplane), installs the examples' CRDs and the user's, writes the rules
// file, runs kubecel run's controller (internal/cli/run) on it in this process with its
// log in the state directory, applies the sample parents and the user's objects, and
// prints what to try, each reload's result and when the sample parents turn Ready, until
// it is interrupted.
package dev
