package rules

import "fmt"

// DefaultMaxChildren is the children limit of a parent when neither the rule nor the
// Options set one: kro's default cap on a collection.
const DefaultMaxChildren = 1000

// LimitError is returned by Evaluate, with a nil Result, when a parent would have more
// children than its rule's MaxChildren: a forEach whose list is too long (refused before
// any element is evaluated), or children that add up to too many. The rule applies
// nothing for such a parent and prunes nothing.
type LimitError struct {
	Rule string
	// Child is the forEach child whose list is too long; empty when the children of the
	// parent add up to too many.
	Child string
	// Count is the number of children found when evaluation stopped: the forEach list's
	// length, or the total so far.
	Count int
	Limit int
}

func (e *LimitError) Error() string {
	if e.Child != "" {
		return fmt.Sprintf("rule %q child %q: forEach yields %d elements, over the limit of %d %s per parent (set maxChildren on the rule to change it)", e.Rule, e.Child, e.Count, e.Limit, children(e.Limit))
	}
	return fmt.Sprintf("rule %q: %d children for one parent, over the limit of %d (maxChildren)", e.Rule, e.Count, e.Limit)
}

// overLimit checks that a child yielding n more objects keeps the parent within the
// rule's limit, and records why not.
func (ev *evaluation) overLimit(ch *Child, n int) bool {
	limit := ev.rule.MaxChildren
	switch total := len(ev.res.Children) + n; {
	case ch.ForEach && n > limit:
		ev.limit = &LimitError{Rule: ev.rule.Name, Child: ch.ID, Count: n, Limit: limit}
	case total > limit:
		ev.limit = &LimitError{Rule: ev.rule.Name, Count: total, Limit: limit}
	}
	return ev.limit != nil
}

func children(n int) string {
	if n == 1 {
		return "child"
	}
	return "children"
}
