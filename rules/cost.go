package rules

import "time"

// The static estimate, the runtime cost model and the options of the programs are
// package celbudget's (celbudget.Costs); what rules keeps are the defaults.

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
)
