package celbudget

import (
	"errors"
	"fmt"

	"github.com/google/cel-go/interpreter"
)

// Sizes charged for what is not bytes: a list element (an interface value, or a string
// header), a map entry (key and value), and a map built by an expression (Go gives the
// smallest map room for eight entries, and CEL wraps it).
const (
	ElemBytes  = 16
	EntryBytes = 32
	mapBytes   = 512
)

// Memory is how budgets refuse. The zero Memory is not usable: Exceeded must be set.
type Memory struct {
	// Exceeded is the error every refusal wraps, and whose text starts its message.
	Exceeded error
	// Default is the size of the budget a charge is checked against, call by call, in
	// a program run without a Holder in its activation.
	Default int64
}

// Budget returns the budget of one evaluation: limit bytes, nothing charged. It is a
// value, so that an evaluation can hold it without another allocation; it is used
// through a pointer.
func (m Memory) Budget(limit int64) Budget {
	return Budget{limit: limit, exceeded: m.Exceeded}
}

// Budget is the byte budget of one evaluation. It is used by one goroutine at a time.
type Budget struct {
	limit, used int64
	exceeded    error
	// refused is the refusal that stopped an expression, until TakeRefused takes it
	// (chargeIn).
	refused error
}

// Room is how many bytes may still be charged.
func (b *Budget) Room() int64 { return b.limit - b.used }

// Charge records that n bytes are about to be built for what (a function, "a list"),
// or returns an error wrapping the Memory's Exceeded, charging nothing, when they do
// not fit. The error's text names what and the limit, never a value or a size computed
// from one (an expression may read Secret data).
func (b *Budget) Charge(n int64, what string) error {
	if n <= 0 {
		return nil
	}
	if n > b.Room() {
		return &memoryError{what: what, limit: b.limit, exceeded: b.exceeded}
	}
	b.used += n
	return nil
}

// Mark returns what has been charged so far, for Rewind.
func (b *Budget) Mark() int64 { return b.used }

// Rewind forgets the charges made since Mark returned mark, and the refusal that
// stopped an expression since: for what was built and thrown away before anything kept
// it (a batch of expressions evaluated again one by one).
func (b *Budget) Rewind(mark int64) { b.used, b.refused = mark, nil }

// Refused reports whether err is (or wraps) a refusal of this budget's Memory: a charge
// that did not fit, as opposed to any other failure of what was being built.
func (b *Budget) Refused(err error) bool {
	return b.exceeded != nil && errors.Is(err, b.exceeded)
}

// memoryError is a refused charge.
type memoryError struct {
	what     string
	limit    int64
	exceeded error
}

func (e *memoryError) Error() string {
	return fmt.Sprintf("%v: %s would take what the expressions of this parent build past %s, the most one evaluation may build; build less from what the parent holds", e.exceeded, e.what, formatBytes(e.limit))
}

func (e *memoryError) Unwrap() error { return e.exceeded }

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

// Holder is implemented by the activation of an evaluation: it carries the
// evaluation's budget to the functions that charge it, as CEL's own cost tracker hides
// its state in the activation.
type Holder interface {
	Budget() *Budget
}

// budgetOf finds the budget of the evaluation that vars belongs to, walking up from a
// comprehension's or the deadline's activation to the evaluation's; nil when there is
// none (a program evaluated outside an evaluation, or planned with constant arguments).
func budgetOf(vars interpreter.Activation) *Budget {
	for a := vars; a != nil; {
		switch v := a.(type) {
		case Holder:
			return v.Budget()
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
// deadline, and report that); the evaluation then reports the refusal (TakeRefused).
// Without an evaluation's budget, the charge is checked against a budget of m.Default
// of its own, and a refusal is an error value: each call is still bounded.
func (m Memory) chargeIn(vars interpreter.Activation, n int64, what string) error {
	b := budgetOf(vars)
	if b == nil {
		fallback := m.Budget(m.Default)
		return fallback.Charge(n, what)
	}
	if err := b.Charge(n, what); err != nil {
		b.refused = err
		panic(interpreter.EvalCancelledError{Cause: memoryLimitExceeded, Message: err.Error()})
	}
	return nil
}

// TakeRefused returns, and forgets, the refusal that stopped the last expression
// evaluated with this budget (a CEL program stops at a refused charge with a
// cancellation whose text is the refusal's); nil when none did, or when b is nil.
func (b *Budget) TakeRefused() error {
	if b == nil {
		return nil
	}
	err := b.refused
	b.refused = nil
	return err
}
