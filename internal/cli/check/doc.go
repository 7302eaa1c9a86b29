// Package check is the logic of kubecel check: it loads the rules offline, type-checked
// against the CRDs of a directory or of a cluster when given (a cluster's served kinds
// and api blocks are checked too), and reports the problems that fail the check, the
// warnings and the notices (what could not be type-checked, lifecycle remarks) as text
// or data.
package check
