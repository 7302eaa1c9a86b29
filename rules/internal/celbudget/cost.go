package celbudget

import (
	"fmt"
	"math"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/kubecel/kubecel/rules/internal/celenv"
)

// Cost control. Every expression runs under a runtime cost limit (CEL's abstract cost
// units, roughly one per value visited or operation); at load time, an expression whose
// worst-case cost, estimated from the sizes the schema states, exceeds the same limit
// is refused.
//
// An expression whose worst case is within the limit for any input (field reads,
// arithmetic, comparisons, a few concatenations) can never reach the limit, so it runs
// without cost tracking, which is most of the cost of evaluating a small expression.
// "Any input" means any object the API server can store: no string, list or map in it
// is larger than maxObjectBytes. Comprehensions over inputs stay tracked.
const (
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

// Costs are a rule's cost limit, the type of its parent, whose schema states the sizes
// the static estimate relies on, and how its programs charge memory: what the estimate
// of each expression and the options of its program depend on.
type Costs struct {
	// Limit bounds the runtime cost of each expression and its static estimate.
	Limit uint64
	// Parent is the declared type of the variable celenv.Parent; nil when the parent
	// has no schema.
	Parent *apiservercel.DeclType
	// Memory is how the programs charge the evaluation's budget.
	Memory Memory
}

// Check estimates the worst-case cost of an expression and says why it is refused ("" when
// it is within the limit).
func (k Costs) Check(env *cel.Env, checked *cel.Ast) string {
	est, err := env.EstimateCost(checked, newEstimator(&sizeEstimator{parent: k.Parent}))
	if err != nil {
		return "cannot estimate the cost: " + err.Error()
	}
	if est.Max > k.Limit {
		return fmt.Sprintf("estimated cost %d exceeds the limit %d: it iterates over too many elements in the worst case; bound the lists it reads (maxItems in the schema) or iterate less", est.Max, k.Limit)
	}
	return ""
}

// ProgramOptions returns the options of the program of a checked expression: the
// deadline checked at every comprehension step, the memory charges
// (Memory.ProgramOptions), and a cost limit unless the expression is Bounded.
func (k Costs) ProgramOptions(env *cel.Env, checked *cel.Ast) []cel.ProgramOption {
	opts := append([]cel.ProgramOption{
		cel.InterruptCheckFrequency(interruptCheckFrequency),
		cel.EvalOptions(cel.OptOptimize),
	}, k.Memory.ProgramOptions(k.Limit)...)
	if !k.Bounded(env, checked) {
		opts = append(opts, cel.CostLimit(k.Limit), cel.CostTracking(&runtimeCost{}))
	}
	return opts
}

// Bounded reports whether the expression's worst-case cost, with every size the schema
// does not state taken as the largest a stored object allows, is well within the cost
// limit. CEL's runtime counts a few units more than its estimate for some nodes (a
// field read costs one more), so the estimate must fit twice, with room to spare.
func (k Costs) Bounded(env *cel.Env, checked *cel.Ast) bool {
	honest := &sizeEstimator{parent: k.Parent, worstCase: true}
	est, err := env.EstimateCost(checked, newEstimator(honest))
	return err == nil && est.Max <= (k.Limit-boundMargin)/2 && k.Limit > boundMargin
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
	if p[0] != celenv.Parent || s.parent == nil {
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

// EstimateCallCost leaves function costs to CEL and the Kubernetes libraries (see
// estimator).
func (s *sizeEstimator) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	return nil
}

// estimator is the static cost model: the Kubernetes libraries' over the sizes that
// sizes states. With every size taken as the largest a stored object allows (bounded),
// a call of a function whose result can be far larger than its arguments (replace,
// join, format: see superlinear) has no bound: such an expression is always tracked,
// so that what it builds counts at runtime (runtimeCost).
type estimator struct {
	library.CostEstimator
	worstCase bool
}

func newEstimator(sizes *sizeEstimator) *estimator {
	return &estimator{CostEstimator: library.CostEstimator{SizeEstimator: sizes}, worstCase: sizes.worstCase}
}

// superlinear are the functions whose result can be much larger than their arguments.
// Concatenation is not among them: CEL's estimate of it counts both operands.
var superlinear = map[string]bool{
	"replace": true, "join": true, "split": true, "format": true, "findAll": true,
	"flatten": true, "strings.quote": true, "distinct": true,
}

// EstimateCallCost implements checker.CostEstimator.
func (e *estimator) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	if e.worstCase && superlinear[function] {
		return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 0, Max: math.MaxUint64}}
	}
	return e.CostEstimator.EstimateCallCost(function, overloadID, target, args)
}

// runtimeCost is the runtime cost model: the Kubernetes libraries', plus, for a
// function that builds a value (growth.go), what it built: a tenth of a unit per byte
// of a string or bytes (what CEL counts for a concatenation), one per element of a
// list or map. A concatenation counts its operands whatever the types the checker
// knew (CEL counts one unit for a concatenation of dyn values).
type runtimeCost struct {
	lib library.CostEstimator
}

// CallCost implements interpreter.ActualCostEstimator.
func (r *runtimeCost) CallCost(function, overloadID string, args []ref.Val, result ref.Val) *uint64 {
	base := r.lib.CallCost(function, overloadID, args, result)
	g, ok := growthFunctions[function]
	if !ok || !g.builds(overloadID) || types.IsError(result) {
		return base
	}
	var cost uint64
	switch {
	case function == "_+_":
		cost = uint64(sizeAdd(argvOf(args), 0))
		if _, isList := result.(traits.Lister); isList {
			cost /= ElemBytes
		} else {
			cost = tenth(cost)
		}
		cost = max(cost, 1)
	case function == "join":
		// The library counts the string built.
		return base
	case g.work != nil:
		cost = g.work(argvOf(args)) + builtCost(result)
	case base != nil:
		cost = *base + builtCost(result)
	default:
		cost = celCallCost(overloadID, args) + builtCost(result)
	}
	return &cost
}

// builtCost is what a value built by a call costs.
func builtCost(v ref.Val) uint64 {
	switch x := v.(type) {
	case types.String:
		return tenth(uint64(len(x)))
	case types.Bytes:
		return tenth(uint64(len(x)))
	case traits.Sizer:
		n, _ := x.Size().(types.Int)
		return uint64(max(n, 0))
	}
	return 0
}

// celCallCost is CEL's own runtime cost of a call its libraries do not count.
func celCallCost(overloadID string, args []ref.Val) uint64 {
	switch overloadID {
	case overloads.StringToBytes, overloads.BytesToString, overloads.ExtQuoteString, overloads.ExtFormatString:
		if len(args) > 0 {
			if s, ok := args[0].(traits.Sizer); ok {
				n, _ := s.Size().(types.Int)
				return tenth(uint64(max(n, 0)))
			}
		}
	}
	return 1
}

// tenth is n times CEL's cost factor of a string traversal, rounded up.
func tenth(n uint64) uint64 {
	return uint64(math.Ceil(float64(n) * common.StringTraversalCostFactor))
}

func isGlobalVar(name string) bool {
	switch name {
	case celenv.Parent, celenv.Children, celenv.Self, celenv.Each, celenv.Index, celenv.Parents:
		return true
	}
	return false
}
