// Package clikit holds what kubecel's commands share: the connection flags and the
// client configuration they make (as kubectl makes it), the installation's identity
// flags, the limits of loading rules, the -o flag and its data printer, the streams a
// command reads and writes, reading a file, objects or CRDs from a path or the standard
// input, an object's status conditions, the small texts of tables and messages, and the
// errors that carry an exit status or a usage hint to package main.
package clikit
