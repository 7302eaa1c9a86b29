package tree

import (
	"context"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types/traits"
)

// A Batch evaluates all the expressions of one tree (or of several, such as all status
// fields) as a single CEL list, which costs one evaluation instead of one per expression:
// most of the cost of evaluating a small expression is CEL's fixed setup.
//
// Batching is only an optimisation. When a batch fails for any reason, the expressions
// are evaluated one by one, which finds the failing one and gives each its own cost
// limit, exactly as without the batch.
type Batch struct {
	prg cel.Program
}

// NewBatch wraps the program compiled from BatchSource's list.
func NewBatch(prg cel.Program) *Batch {
	return &Batch{prg: prg}
}

// Run evaluates the batch; nil means "evaluate one by one", as does a nil Batch.
func (b *Batch) Run(ctx context.Context, vars *Activation) traits.Lister {
	if b == nil {
		return nil
	}
	var mark int64
	if vars.Bytes != nil {
		mark = vars.Bytes.Mark()
	}
	out, _, err := b.prg.ContextEval(ctx, vars)
	list, isList := out.(traits.Lister)
	if err != nil || !isList {
		// The expressions are evaluated again one by one, and charge again what they
		// build: what the batch built is garbage.
		if vars.Bytes != nil {
			vars.Bytes.Rewind(mark)
		}
		return nil
	}
	return list
}
