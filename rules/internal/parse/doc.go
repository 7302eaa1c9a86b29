// Package parse reads the bytes of a rules file into source structs, strictly: unknown
// fields and wrongly typed values are problems that name their place (a Where), and
// everything else that could be read is kept. It also cuts a rule set's files into their
// YAML documents, finds the line of a path in its document and warns of YAML 1.1
// booleans. Meaning (names, references, expressions) is checked by the compiler, which
// turns each Problem into the package rules' Error.
package parse
