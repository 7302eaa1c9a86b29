// Package rulesfrom loads the rules a command evaluates, from where its flags say:
// --rules files and directories (or the standard input), --rules-configmap and
// --rules-configmap-selector read once, or, by default for the commands that read a
// cluster, the revisions the installation runs, read only when their proofs verify
// under its key.
package rulesfrom
