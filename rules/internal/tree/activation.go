package tree

import (
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	"github.com/kubecel/kubecel/rules/internal/celbudget"
	"github.com/kubecel/kubecel/rules/internal/celenv"
)

// Activation resolves the CEL variables of a rule's expressions (celenv's names); a
// variable left nil is not set.
type Activation struct {
	// ParentObject is `parent` (Parent is the method of interpreter.Activation).
	ParentObject               ref.Val
	Children, Refs, Self, Each ref.Val
	Index                      ref.Val
	// Parents is what rollout.healthy reads.
	Parents ref.Val
	// Bytes is the evaluation's byte budget, which the programs and Fill charge.
	Bytes *celbudget.Budget
}

var (
	_ interpreter.Activation = (*Activation)(nil)
	_ celbudget.Holder       = (*Activation)(nil)
)

// Budget implements celbudget.Holder.
func (a *Activation) Budget() *celbudget.Budget { return a.Bytes }

// ResolveName implements interpreter.Activation.
func (a *Activation) ResolveName(name string) (any, bool) {
	var v ref.Val
	switch name {
	case celenv.Parent:
		v = a.ParentObject
	case celenv.Children:
		v = a.Children
	case celenv.Refs:
		v = a.Refs
	case celenv.Self:
		v = a.Self
	case celenv.Each:
		v = a.Each
	case celenv.Index:
		v = a.Index
	case celenv.Parents:
		v = a.Parents
	}
	return v, v != nil
}

// Parent implements interpreter.Activation: there is none.
func (a *Activation) Parent() interpreter.Activation { return nil }
