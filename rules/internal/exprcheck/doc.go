// Package exprcheck analyses compiled CEL expressions statically, for the compiler of a
// rules file: whether a static type can give the kind of value a field wants, where a
// CEL location falls in the field's text, which entries of a map variable (children,
// refs) an expression reads and in what cycles, lists.range calls that would allocate
// before their cost is counted, and which fields of the parent an expression selects
// that its schema says may be absent.
//
// It reports facts and messages; the caller places them.
package exprcheck
