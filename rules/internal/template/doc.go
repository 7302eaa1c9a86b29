// Package template compiles a template value of a rules file (a child's template, a
// status field, a ref's name or selector) into a tree.Node: maps, lists and constants
// as they are, a string that is exactly ${expr} into an expression node whose value keeps
// its type, a string with text around its ${...} parts into a text node. Literals and
// keys are checked against the schema of the kind (a kindschema.Place); the caller's
// Compiler compiles each expression and keeps the problems, so that they name its own
// places.
//
// FromLiteral builds the same kind of tree from a CEL map or list literal (an expr
// child's object), splitting it along its constant keys so that each entry value is an
// expression of its own.
package template
