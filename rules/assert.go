package rules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/parser"

	"github.com/kubecel/kubecel/rules/internal/celenv"
	"github.com/kubecel/kubecel/rules/internal/celjson"
)

// This file holds the assertions of rules tests (kubecel test): CEL expressions over what
// a rule computed for a parent, each of which must be true.

// Assertion variables: the rendered outcome of a test.
const (
	AssertParent   = "parent"   // the parent object
	AssertChildren = "children" // by child id: the shaped object, or a list for forEach
	AssertStatus   = "status"   // the computed status fields
	AssertReady    = "ready"    // every included child exists and is ready
)

// Assertion is a compiled assertion: a CEL expression that must evaluate to true.
type Assertion struct {
	Expr string
	prg  cel.Program
	// operands are the sides of a comparison at the top of the expression (a == b,
	// a < b, x in list ...) that are not literals, evaluated again to show what each
	// side was; nil otherwise.
	operands []operand
}

type operand struct {
	text string
	prg  cel.Program
}

// assertEnv declares the assertion variables, all dynamically typed. It is built once.
var assertEnv = sync.OnceValues(func() (*cel.Env, error) {
	lib, err := celenv.Library()
	if err != nil {
		return nil, err
	}
	object := cel.MapType(cel.StringType, cel.DynType)
	return lib.Extend(
		cel.Variable(AssertParent, object),
		cel.Variable(AssertChildren, object),
		cel.Variable(AssertStatus, object),
		cel.Variable(AssertReady, cel.BoolType),
		// Macros (map, all, exists...) stay known, so that a side of a comparison that
		// uses one can be written out again.
		cel.EnableMacroCallTracking(),
	)
})

// CompileAssertion compiles expr, which must be of type bool.
func CompileAssertion(expr string) (*Assertion, error) {
	env, err := assertEnv()
	if err != nil {
		return nil, err
	}
	checked, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("%s: %s", expr, iss.Err())
	}
	if !checked.OutputType().IsExactType(cel.BoolType) && !checked.OutputType().IsExactType(cel.DynType) {
		return nil, fmt.Errorf("%s: must be a bool, not %s", expr, checked.OutputType())
	}
	a := &Assertion{Expr: expr}
	if a.prg, err = assertProgram(env, checked); err != nil {
		return nil, fmt.Errorf("%s: %w", expr, err)
	}
	a.operands = comparisonOperands(env, checked.NativeRep())
	return a, nil
}

func assertProgram(env *cel.Env, checked *cel.Ast) (cel.Program, error) {
	return env.Program(checked, append(memory.ProgramOptions(DefaultCostLimit), cel.CostLimit(DefaultCostLimit), cel.InterruptCheckFrequency(100))...)
}

// comparisonOperands compiles both sides of a comparison at the top of an expression.
func comparisonOperands(env *cel.Env, a *ast.AST) []operand {
	e := a.Expr()
	if e.Kind() != ast.CallKind {
		return nil
	}
	call := e.AsCall()
	switch call.FunctionName() {
	case operators.Equals, operators.NotEquals, operators.Less, operators.LessEquals,
		operators.Greater, operators.GreaterEquals, operators.In:
	default:
		return nil
	}
	var out []operand
	for _, arg := range call.Args() {
		if arg.Kind() == ast.LiteralKind {
			continue // its value is in the expression
		}
		text, err := parser.Unparse(arg, a.SourceInfo())
		if err != nil {
			return nil
		}
		checked, iss := env.Compile(text)
		if iss.Err() != nil {
			return nil
		}
		prg, err := assertProgram(env, checked)
		if err != nil {
			return nil
		}
		out = append(out, operand{text: text, prg: prg})
	}
	return out
}

// AssertionVars are the values an assertion reads.
type AssertionVars struct {
	Parent   map[string]any
	Children map[string]any
	Status   map[string]any
	Ready    bool
}

func (v AssertionVars) activation() map[string]any {
	orEmpty := func(m map[string]any) any {
		if m == nil {
			return celjson.Value(map[string]any{})
		}
		return celjson.Value(m)
	}
	return map[string]any{
		AssertParent:   orEmpty(v.Parent),
		AssertChildren: orEmpty(v.Children),
		AssertStatus:   orEmpty(v.Status),
		AssertReady:    types.Bool(v.Ready),
	}
}

// Check evaluates the assertion. It returns nil when it holds, and otherwise an error
// that says what it evaluated to: false (with the value of each side of a comparison),
// a value that is not a bool, or the evaluation error.
func (a *Assertion) Check(ctx context.Context, vars AssertionVars) error {
	act := vars.activation()
	out, _, err := a.prg.ContextEval(ctx, act)
	if err != nil {
		return fmt.Errorf("%s: %s", a.Expr, oneLine(err.Error()))
	}
	b, ok := out.(types.Bool)
	if !ok {
		b := memory.Budget(DefaultMaxEvalBytes)
		v, _ := celjson.ToJSON(out, &b)
		return fmt.Errorf("%s: is %s, not a bool", a.Expr, display(v))
	}
	if b {
		return nil
	}
	var sides []string
	for _, op := range a.operands {
		val, _, err := op.prg.ContextEval(ctx, act)
		if err != nil {
			sides = append(sides, fmt.Sprintf("%s: %s", op.text, oneLine(err.Error())))
			continue
		}
		b := memory.Budget(DefaultMaxEvalBytes)
		v, err := celjson.ToJSON(val, &b)
		if err != nil {
			continue
		}
		sides = append(sides, fmt.Sprintf("%s = %s", op.text, display(v)))
	}
	if len(sides) == 0 {
		return errors.New(a.Expr + ": false")
	}
	return fmt.Errorf("%s: false (%s)", a.Expr, strings.Join(sides, "; "))
}

// display is a value as compact JSON.
func display(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}
