package tree

import (
	"strings"

	"github.com/google/cel-go/cel"
)

// Kind says what a Node is.
type Kind uint8

const (
	// Const is a literal scalar.
	Const Kind = iota
	// Map is an object with constant keys.
	Map
	// List is a list.
	List
	// Expr is a string that is exactly ${expr}: the value keeps the expression's type.
	Expr
	// Text is a string with ${} interpolations.
	Text
)

// Program is the caller's record of one compiled expression. The zero P stands for an
// expression that failed to compile (the rule will not load).
type Program interface {
	comparable
	// Program is the compiled CEL program that evaluates the expression.
	Program() cel.Program
	// CEL is the expression's CEL text, which BatchSource joins into one list.
	CEL() string
}

// Node is one compiled template value. Nodes are immutable once built, except for the
// slots BatchSource numbers before the tree is first evaluated.
type Node[P Program] struct {
	Kind Kind
	// Exact keeps an Expr node's value as it is, as in a CEL map literal: an optional
	// value is then an error instead of leaving the field out.
	Exact bool
	// slot is an Expr node's index in its tree's batch. (Kind, Exact and slot fit in one
	// word: a rule keeps many nodes.)
	slot int32
	// Value is a Const node's value: a string, int64, float64, bool or nil.
	Value any
	// Keys are a Map node's keys, sorted; Elems are its values, in the same order, or a
	// List node's items.
	Keys  []string
	Elems []*Node[P]
	// Prog is an Expr node's expression.
	Prog P
	// Parts are a Text node's pieces.
	Parts []Part[P]
}

// Part is a piece of a Text node: literal text, or an expression when IsExpr is set
// (Prog is the zero P when that expression failed to compile).
type Part[P Program] struct {
	Text string
	Prog P
	// IsExpr is set for an expression, whose index in its tree's batch is slot.
	IsExpr bool
	slot   int32
}

// BatchSource numbers the expressions below roots with their slot in a batch and
// returns them as one CEL list literal, and how many there are (0 when one of them
// failed to compile). The caller compiles the list into a Batch, in the environment the
// expressions were compiled in, when there are at least two.
func BatchSource[P Program](roots ...*Node[P]) (string, int) {
	var src strings.Builder
	n := 0
	add := func(p P) bool {
		var failed P
		if p == failed {
			return false
		}
		if n > 0 {
			src.WriteString(",")
		}
		// A newline before the closing parenthesis ends any trailing // comment.
		src.WriteString("(" + p.CEL() + "\n)")
		n++
		return true
	}
	var walk func(nd *Node[P]) bool
	walk = func(nd *Node[P]) bool {
		if nd == nil {
			return true
		}
		switch nd.Kind {
		case Expr:
			nd.slot = int32(n)
			return add(nd.Prog)
		case Text:
			for i := range nd.Parts {
				part := &nd.Parts[i]
				if !part.IsExpr {
					continue
				}
				part.slot = int32(n)
				if !add(part.Prog) {
					return false
				}
			}
		case Map, List:
			for _, e := range nd.Elems {
				if !walk(e) {
					return false
				}
			}
		}
		return true
	}
	src.WriteString("[")
	for _, root := range roots {
		if !walk(root) {
			return "", 0
		}
	}
	src.WriteString("]")
	return src.String(), n
}
