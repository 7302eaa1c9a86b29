package rules

import (
	"errors"

	"github.com/kubecel/kubecel/rules/internal/celbudget"
)

// Memory control. Whoever writes a parent decides the sizes of the strings and lists
// that expressions read, and some CEL functions build results far larger than their
// inputs: `t.replace("x", name)` builds size(t) x size(name) bytes, `s.split("").join(s)`
// size(s) squared. The cost limit cannot stop such a call: CEL counts a call's cost after
// it returned, and one Go call cannot be interrupted. So each evaluation of a parent has
// a byte budget (Options.MaxEvalBytes), and everything that builds a string, bytes, a
// list or a map charges it BEFORE building: the functions CEL calls compute the size of
// their result from their arguments first and are refused, with ErrMemoryLimit, when it
// does not fit (package celbudget plans them so); list and map literals charge their
// elements; a template's interpolated strings and the values converted into the
// manifest (convert.go) charge their size. A refused call allocates nothing.
//
// The budget counts what is built, garbage or not: roughly what the evaluation
// allocates. What the parent holds is read in place and not counted until copied into a
// child or the status.

// DefaultMaxEvalBytes is the byte budget of one evaluation of a parent when
// Options.MaxEvalBytes is 0: a little more than one expression can build within the
// default cost limit (which counts one unit per ten bytes of strings it builds), and,
// times the controller's default 16 workers, half of the controller's shipped memory
// limit (512 MiB).
const DefaultMaxEvalBytes = 16 << 20

// ErrMemoryLimit is wrapped by evaluation errors of expressions that would have built
// more than the evaluation's byte budget allows (Options.MaxEvalBytes).
var ErrMemoryLimit = errors.New("memory limit exceeded")

// memory is how the byte budgets of evaluations refuse: with ErrMemoryLimit, and, for a
// program run outside an evaluation (an assertion of a rules test), within a budget of
// the default size per call.
var memory = celbudget.Memory{Exceeded: ErrMemoryLimit, Default: DefaultMaxEvalBytes}
