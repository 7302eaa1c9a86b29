package rules

import (
	"github.com/google/cel-go/cel"

	"github.com/kubecel/kubecel/rules/internal/exprcheck"
	"github.com/kubecel/kubecel/rules/internal/template"
)

// exprTemplate returns the template tree of an expr child's map literal
// (template.FromLiteral), or nil. Its leaves are compiled on their own; their errors name
// the expr field and show the whole expression, as without the split. They keep no
// checked AST: nothing analyses them at load.
func (c *compiler) exprTemplate(env *cel.Env, p *program) *node {
	native := p.checked.NativeRep()
	leaf := func(src string, w where) (*program, bool) {
		checked, iss := c.envs.Compile(env, src)
		if iss.Err() != nil {
			return nil, false
		}
		prg, err := c.program(env, src, checked)
		if err != nil {
			return nil, false
		}
		return &program{w: w, source: p.source, src: src, prg: prg, out: checked.OutputType(), selections: exprcheck.SelectionsOf(checked)}, true
	}
	n, ok := template.FromLiteral(native.Expr(), native.SourceInfo(), p.w, leaf)
	if !ok {
		return nil
	}
	return n
}
