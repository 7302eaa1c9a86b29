// Package celjson moves values between the JSON-like Go values of Kubernetes objects
// (map[string]any, []any, string, int64, float64, bool and nil) and CEL.
//
// Value presents an object to CEL without copying it, and iterates maps in key order so
// that an expression gives the same result on every evaluation. ToJSON turns what an
// expression returned back into a manifest value, charging a celbudget.Budget with what
// it builds; ToText formats a value interpolated into a string; CopyJSON deep-copies a
// Go value under the same budget.
package celjson
