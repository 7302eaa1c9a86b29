package rules

import (
	"fmt"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	celast "github.com/google/cel-go/common/ast"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

// Cost control. Every expression runs under a deadline and a runtime cost limit (CEL's
// abstract cost units, roughly one per value visited or operation); at load time, an
// expression whose worst-case cost, estimated from the sizes the schema states, exceeds
// the same limit is rejected.
//
// An expression whose worst case is within the limit for any input (field reads,
// arithmetic, comparisons, a few concatenations) can never reach the limit, so it runs
// without cost tracking, which is most of the cost of evaluating a small expression.
// "Any input" means any object the API server can store: no string, list or map in it
// is larger than maxObjectBytes. Comprehensions over inputs stay tracked.
const (
	// DefaultCostLimit is the per-expression runtime cost limit: the Kubernetes
	// apiserver's per-expression limit for validation rules.
	DefaultCostLimit = 1_000_000
	// DefaultEvalTimeout bounds one Evaluate call (all expressions of one parent).
	DefaultEvalTimeout = 100 * time.Millisecond
	// interruptCheckFrequency is how many comprehension iterations run between checks
	// of the context's deadline. It must be 1: CEL's check counter is shared by nested
	// comprehensions, and an interrupted inner loop does not stop the loops around it, so
	// with a sparser check a deadline stops nested loops only after a long while. A check
	// is a non-blocking channel receive.
	interruptCheckFrequency = 1
)

// unknownSize returns what the static estimate assumes for a list, map or string whose
// bound the schema does not state: one element. The estimate then measures only what
// the stated bounds make certain, so that ordinary comprehensions over unbounded lists
// load, and the runtime limit guards them instead.
func unknownSize() *checker.SizeEstimate { return &checker.SizeEstimate{Min: 0, Max: 1} }

// checkCost estimates the worst-case cost of an expression and reports it when it
// exceeds the limit.
func (c *compiler) checkCost(env *cel.Env, w where, source string, checked *cel.Ast) bool {
	est, err := env.EstimateCost(checked, &library.CostEstimator{SizeEstimator: c.sizes})
	if err != nil {
		c.fail(w, source, 0, "cannot estimate the cost: "+err.Error())
		return false
	}
	if est.Max > c.costLimit {
		c.fail(w, source, 0, fmt.Sprintf("estimated cost %d exceeds the limit %d: it iterates over too many elements in the worst case; bound the lists it reads (maxItems in the schema) or iterate less", est.Max, c.costLimit))
		return false
	}
	return true
}

// programOptions returns the options of the program of a checked expression: a cost
// limit unless the expression is bounded below it whatever the sizes of its inputs.
func (c *compiler) programOptions(env *cel.Env, checked *cel.Ast) []cel.ProgramOption {
	opts := []cel.ProgramOption{
		cel.InterruptCheckFrequency(interruptCheckFrequency),
		cel.EvalOptions(cel.OptOptimize),
	}
	if !c.bounded(env, checked) {
		opts = append(opts, cel.CostLimit(c.costLimit), cel.CostTracking(&library.CostEstimator{}))
	}
	return opts
}

// bounded reports whether the expression's worst-case cost, with every size the schema
// does not state taken as the largest a stored object allows, is well within the cost
// limit. CEL's runtime counts a few units more than its estimate for some nodes (a
// field read costs one more), so the estimate must fit twice, with room to spare.
func (c *compiler) bounded(env *cel.Env, checked *cel.Ast) bool {
	honest := &sizeEstimator{parent: c.sizes.parent, worstCase: true}
	est, err := env.EstimateCost(checked, &library.CostEstimator{SizeEstimator: honest})
	return err == nil && est.Max <= (c.costLimit-boundMargin)/2 && c.costLimit > boundMargin
}

// boundMargin is the room left between twice a bounded expression's estimate and the
// cost limit.
const boundMargin = 100

// sizeEstimator tells CEL's cost estimator the sizes the parent's schema states.
type sizeEstimator struct {
	// parent is the declared type of `parent`; nil when it has no schema.
	parent *apiservercel.DeclType
	// worstCase takes an unknown size as the largest a stored object allows, instead
	// of as one element.
	worstCase bool
}

// maxObjectBytes is the largest object the API server stores: etcd's default request
// size limit (1.5 MiB). No string, list or map in a parent or a child is larger.
const maxObjectBytes = 1536 * 1024

// EstimateSize returns the stated bound of the value at the node's path (for example
// parent.spec.ports with maxItems), an unknown size when none is stated, and nil for
// comprehension variables, whose sizes CEL tracks itself.
func (s *sizeEstimator) EstimateSize(node checker.AstNode) *checker.SizeEstimate {
	p := node.Path()
	if len(p) == 0 {
		if e := node.Expr(); e != nil && e.Kind() == celast.IdentKind && !isGlobalVar(e.AsIdent()) {
			return nil
		}
		return s.unknown()
	}
	if p[0] != varParent || s.parent == nil {
		return s.unknown()
	}
	t := s.parent
	for _, name := range p[1:] {
		switch name {
		case "@items", "@values":
			t = t.ElemType
		case "@keys":
			t = t.KeyType
		default:
			if f, ok := t.Fields[name]; ok {
				t = f.Type
			} else if t.IsMap() {
				t = t.ElemType
			} else {
				t = nil
			}
		}
		if t == nil {
			return s.unknown()
		}
	}
	if t.MaxElements <= 0 {
		return s.unknown()
	}
	return &checker.SizeEstimate{Min: 0, Max: uint64(t.MaxElements)}
}

// unknown is the size of a value whose bound the schema does not state.
func (s *sizeEstimator) unknown() *checker.SizeEstimate {
	if s.worstCase {
		return &checker.SizeEstimate{Min: 0, Max: maxObjectBytes}
	}
	return unknownSize()
}

// EstimateCallCost leaves function costs to CEL and the Kubernetes libraries.
func (s *sizeEstimator) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	return nil
}

func isGlobalVar(name string) bool {
	switch name {
	case varParent, varChildren, varSelf, varEach, varIndex, varParents:
		return true
	}
	return false
}
