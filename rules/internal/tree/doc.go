// Package tree holds the compiled form of a template value (a child's template, a status
// field, a ref's name) and evaluates it into the JSON-like Go values of a manifest.
//
// A Node is a map, a list, a constant, a string that is exactly one expression, or a
// string with text around its expressions. Nodes are built once by the compiler and
// never change after; Fill evaluates a tree for one set of variables (an Activation),
// asking its Host to run each expression and to record each failure, so that the
// caller's errors name its own program records. A Batch computes all the expressions of
// a tree as one CEL list, the evaluation's fast path; Fill takes their values from it
// by the slot BatchSource numbered them with.
//
// The package knows nothing of rules, children or errors: P is the caller's record of one
// compiled expression.
package tree
