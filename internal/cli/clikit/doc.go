// Package clikit holds what kubecel's commands share: the connection flags and the
// client configuration they make (as kubectl makes it), the installation's identity
// flags, the limits of loading rules, the -o flag and its data printer, reading a file
// or the standard input, and the errors that carry an exit status or a usage hint to
// package main.
package clikit
