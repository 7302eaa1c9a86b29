// Package celbudget bounds what a CEL program may spend: time, counted in CEL's cost
// units, and memory, counted in bytes.
//
// Cost. Costs estimates an expression's worst-case cost at load time from the sizes
// the parent's schema states (Costs.Check refuses one over the limit), and gives its
// program a runtime cost limit unless the expression is bounded below it whatever its
// inputs (Costs.Bounded): most of the cost of evaluating a small expression is the
// tracking. A function whose work grows as the product of its inputs' sizes (distinct,
// the sets functions, a string's indexOf) has its work computed from its arguments
// first, and a call whose work alone exceeds the limit stops the expression as the cost
// limit does: one Go call cannot be interrupted.
//
// Memory. Some CEL functions build results far larger than their inputs
// (`t.replace("x", name)`, `s.split("").join(s)`), and CEL counts a call's cost only after
// it returned. The programs planned with Memory.ProgramOptions charge a Budget, found
// through the activation (Holder), BEFORE each call that builds a string, bytes, a list
// or a map: the call's sizer computes its result's size from its arguments, and a call
// that does not fit is refused, building nothing, with an error that wraps
// Memory.Exceeded. Non-constant list and map literals charge their elements. Callers
// charge what they build from the values themselves (Budget.Charge).
package celbudget
