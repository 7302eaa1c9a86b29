package rules

import (
	"context"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types/traits"
)

// A batch evaluates all the expressions of one template (or of all status fields) as a
// single CEL list, which costs one evaluation instead of one per expression: most of the
// cost of evaluating a small expression is CEL's fixed setup.
//
// Batching is only an optimisation. The batch runs under the per-expression cost
// limit (unless its worst case is within it); when it fails for any reason, the expressions are evaluated one by one, which
// finds the failing one and gives each its own limit, exactly as without the batch.
type batch struct {
	prg cel.Program
}

// newBatch compiles the expressions below roots into one batch and numbers them with
// their slot in it. It returns nil when there is nothing to gain or the combined source
// does not compile (for example over the parser's size limit).
func (c *compiler) newBatch(env *cel.Env, roots ...*node) *batch {
	list, n := batchList(roots...)
	if n < 2 {
		return nil
	}
	return c.compileBatch(env, list)
}

// batchList numbers the expressions below roots with their slot and returns them as a
// CEL list literal, and how many there are (0 when one failed to compile).
func batchList(roots ...*node) (string, int) {
	var progs []*program
	for _, n := range roots {
		collectPrograms(n, &progs)
	}
	var src strings.Builder
	src.WriteString("[")
	for i, p := range progs {
		if p == nil {
			// A part that failed to compile: the rule will not load anyway.
			return "", 0
		}
		if i > 0 {
			src.WriteString(",")
		}
		// A newline before the closing parenthesis ends any trailing // comment.
		src.WriteString("(" + p.src + "\n)")
		p.slot = i
	}
	src.WriteString("]")
	return src.String(), len(progs)
}

func (c *compiler) compileBatch(env *cel.Env, src string) *batch {
	checked, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil
	}
	prg, err := env.Program(checked, c.cost.ProgramOptions(env, checked)...)
	if err != nil {
		return nil
	}
	return &batch{prg: prg}
}

func collectPrograms(n *node, progs *[]*program) {
	if n == nil {
		return
	}
	switch n.kind {
	case exprNode:
		*progs = append(*progs, n.prog)
	case textNode:
		for _, part := range n.parts {
			if part.prog != nil || part.text == "" {
				*progs = append(*progs, part.prog)
			}
		}
	case mapNode, listNode:
		for _, e := range n.elems {
			collectPrograms(e, progs)
		}
	}
}

// run evaluates the batch; nil means "evaluate one by one".
func (b *batch) run(ctx context.Context, vars *activation) traits.Lister {
	if b == nil {
		return nil
	}
	var mark int64
	if vars.budget != nil {
		mark = vars.budget.Mark()
	}
	out, _, err := b.prg.ContextEval(ctx, vars)
	list, isList := out.(traits.Lister)
	if err != nil || !isList {
		// The expressions are evaluated again one by one, and charge again what they
		// build: what the batch built is garbage.
		if vars.budget != nil {
			vars.budget.Rewind(mark)
		}
		return nil
	}
	return list
}
