package rules

import (
	"errors"
	"fmt"

	"github.com/google/cel-go/interpreter"
)

// Memory control. Whoever writes a parent decides the sizes of the strings and lists
// that expressions read, and some CEL functions build results far larger than their
// inputs: `t.replace("x", name)` builds size(t) x size(name) bytes, `s.split("").join(s)`
// size(s) squared. The cost limit cannot stop such a call: CEL counts a call's cost after
// it returned, and one Go call cannot be interrupted. So each evaluation of a parent has
// a byte budget (Options.MaxEvalBytes), and everything that builds a string, bytes, a
// list or a map charges it BEFORE building: the functions of growth.go compute the size
// of their result from their arguments first and are refused, with ErrMemoryLimit, when
// it does not fit; list and map literals charge their elements; a template's
// interpolated strings and the values converted into the manifest (convert.go) charge
// their size. A refused call allocates nothing.
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

// Sizes charged for what is not bytes: a list element (an interface value, or a string
// header), a map entry (key and value), and a map built by an expression (Go gives the
// smallest map room for eight entries, and CEL wraps it).
const (
	elemBytes  = 16
	entryBytes = 32
	mapBytes   = 512
)

// ErrMemoryLimit is wrapped by evaluation errors of expressions that would have built
// more than the evaluation's byte budget allows (Options.MaxEvalBytes).
var ErrMemoryLimit = errors.New("memory limit exceeded")

// budget is the byte budget of one evaluation. It is used by one goroutine at a time
// (one Evaluate call).
type budget struct {
	limit, used int64
	// refused is the refusal that stopped an expression, until evaluation.cause takes
	// it (chargeIn).
	refused error
}

func newBudget(limit int64) *budget {
	return &budget{limit: limit}
}

// room is how many bytes may still be charged.
func (b *budget) room() int64 { return b.limit - b.used }

// charge records that n bytes are about to be built for what (a function, "a list"),
// or returns an error wrapping ErrMemoryLimit, charging nothing, when they do not fit.
func (b *budget) charge(n int64, what string) error {
	if n <= 0 {
		return nil
	}
	if n > b.room() {
		return &memoryError{what: what, limit: b.limit}
	}
	b.used += n
	return nil
}

// memoryError is a refused charge. Its text names what was refused and the limit, never
// a value or a size computed from one (an expression may read Secret data).
type memoryError struct {
	what  string
	limit int64
}

func (e *memoryError) Error() string {
	return fmt.Sprintf("%v: %s would take what the expressions of this parent build past %s, the most one evaluation may build; build less from what the parent holds", ErrMemoryLimit, e.what, formatBytes(e.limit))
}

func (e *memoryError) Unwrap() error { return ErrMemoryLimit }

// formatBytes renders a byte count for messages: in MiB or KiB when it is a whole
// number of them.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// budgetHolder is implemented by the activation of an evaluation (evalnode.go): it
// carries the evaluation's budget to the functions that charge it, as CEL's own cost
// tracker hides its state in the activation.
type budgetHolder interface {
	evalBudget() *budget
}

// budgetOf finds the budget of the evaluation that vars belongs to, walking up from a
// comprehension's or the deadline's activation to the evaluation's; nil when there is
// none (a program evaluated outside Evaluate, or planned with constant arguments).
func budgetOf(vars interpreter.Activation) *budget {
	for a := vars; a != nil; {
		switch v := a.(type) {
		case budgetHolder:
			return v.evalBudget()
		case interface{ Unwrap() interpreter.Activation }:
			// CEL's execution frame wraps the activation it evaluates in.
			a = v.Unwrap()
		default:
			a = a.Parent()
		}
	}
	return nil
}

// memoryLimitExceeded is why an expression stopped at a refused charge.
const memoryLimitExceeded interpreter.CancellationCause = 100

// chargeIn charges the budget of the evaluation that vars belongs to. A refused charge
// stops that expression at once, as CEL stops one at its cost limit (otherwise a
// comprehension would go on with an error for each element until the cost limit or the
// deadline, and report that); evaluation.cause then reports the refusal. Without an
// evaluation's budget, the charge is checked against a budget of the default size of
// its own, and a refusal is an error value: each call is still bounded.
func chargeIn(vars interpreter.Activation, n int64, what string) error {
	b := budgetOf(vars)
	if b == nil {
		return newBudget(DefaultMaxEvalBytes).charge(n, what)
	}
	if err := b.charge(n, what); err != nil {
		b.refused = err
		panic(interpreter.EvalCancelledError{Cause: memoryLimitExceeded, Message: err.Error()})
	}
	return nil
}

// takeRefused returns, and forgets, the refusal that stopped the last expression; nil
// when none did.
func (b *budget) takeRefused() error {
	if b == nil {
		return nil
	}
	err := b.refused
	b.refused = nil
	return err
}
