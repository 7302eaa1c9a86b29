package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/parser"

	"github.com/kubecel/kubecel/rules/internal/celenv"
	"github.com/kubecel/kubecel/rules/internal/exprcheck"
	"github.com/kubecel/kubecel/rules/internal/parse"
)

// hints improve the messages CEL gives for a misspelled field or variable: the nearest
// declared name, and what kubecel calls what another tool (kro) names otherwise.
type hints struct {
	// childIDs and refIDs are the ids of the rule's children and refs.
	childIDs, refIDs []string
	envs             *celenv.Envs
}

// improve returns CEL's message of an error in the expression parsed (nil when it did
// not parse) at node id, with a hint where one helps.
func (h hints) improve(msg string, env *cel.Env, parsed *cel.Ast, id int64) string {
	out := strings.TrimPrefix(msg, "Syntax error: ")
	if out != msg {
		out = "syntax error: " + out
	}
	switch {
	case strings.HasPrefix(out, "undeclared reference to '"):
		return h.undeclared(out, env)
	case strings.HasPrefix(out, "undefined field '") && env != nil:
		return out + h.suggestField(env, parsed, id, out)
	case strings.Contains(out, "optional_type("):
		return out + "; x.?y is an optional: unwrap it with .orValue(default), e.g. .orValue(false) in a condition"
	}
	return out
}

// undeclared rewrites CEL's "undeclared reference" message with a hint.
func (h hints) undeclared(msg string, env *cel.Env) string {
	name, _, _ := strings.Cut(strings.TrimPrefix(msg, "undeclared reference to '"), "'")
	out := fmt.Sprintf("undeclared reference to '%s'", name)
	if env != nil && declares(env, celenv.Parents) && name != celenv.Parents {
		return out + ": rollout.healthy reads only parents, the list of the parents the rollout has reached"
	}
	// kro reads a resource by its id; kubecel, a child in children and a ref in refs.
	switch {
	case env != nil && slices.Contains(h.childIDs, name) && declares(env, celenv.Children):
		return out + fmt.Sprintf(": %s is a child of this rule: read it as children.%s", name, name)
	case env != nil && slices.Contains(h.refIDs, name) && declares(env, celenv.Refs):
		return out + fmt.Sprintf(": %s is a ref of this rule: read it as refs.%s", name, name)
	}
	switch name {
	case celenv.Each, celenv.Index:
		return out + ": each and index exist only in a forEach child's template, expr and readyWhen"
	case celenv.Self:
		return out + ": self (the observed child) exists only in readyWhen"
	case celenv.Children:
		return out + ": children cannot be read here; parent.when decides whether the rule applies before any child exists"
	case "schema": // kro's name of the instance
		if env != nil && declares(env, celenv.Parent) {
			return out + ": kubecel names the parent object parent, where kro says schema: write parent.spec.x for schema.spec.x"
		}
	}
	if env == nil {
		return out
	}
	var names []string
	for _, v := range env.Variables() {
		names = append(names, v.Name())
	}
	return out + parse.DidYouMean(name, names)
}

// declares reports whether env declares the variable name.
func declares(env *cel.Env, name string) bool {
	for _, v := range env.Variables() {
		if v.Name() == name {
			return true
		}
	}
	return false
}

// suggestField finds the object type that lacks the field named in msg and suggests
// the closest field it has. It type-checks the selection's operand on its own, which
// fails harmlessly when the operand uses comprehension variables.
func (h hints) suggestField(env *cel.Env, parsed *cel.Ast, id int64, msg string) string {
	if h.envs.Types == nil || parsed == nil {
		return ""
	}
	field, _, _ := strings.Cut(strings.TrimPrefix(msg, "undefined field '"), "'")
	native := parsed.NativeRep()
	var operand celast.Expr
	exprcheck.Visit(native.Expr(), func(e celast.Expr) bool {
		if e.ID() == id && e.Kind() == celast.SelectKind {
			operand = e.AsSelect().Operand()
		}
		return operand == nil
	})
	if operand == nil {
		return ""
	}
	src, err := parser.Unparse(operand, native.SourceInfo())
	if err != nil {
		return ""
	}
	checked, iss := h.envs.Compile(env, src)
	if iss.Err() != nil || checked.OutputType().Kind() != types.StructKind {
		return ""
	}
	decl, ok := h.envs.Types.FindDeclType(checked.OutputType().TypeName())
	if !ok {
		return ""
	}
	names := make([]string, 0, len(decl.Fields))
	for name := range decl.Fields {
		names = append(names, name)
	}
	return parse.DidYouMean(field, names)
}
