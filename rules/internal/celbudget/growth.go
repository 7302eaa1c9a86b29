package celbudget

import (
	"fmt"
	"regexp"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/functions"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"

	"github.com/kubecel/kubecel/rules/internal/celenv"
)

// This file plans the calls that build strings, bytes, lists and maps so that they
// charge the evaluation's budget (budget.go) before they build anything. A decorator
// replaces each such call in a program's plan by a growthCall, which evaluates the
// arguments as CEL does, asks the function's sizer how large its result will be, charges
// that and only then calls the function's own implementation: CEL's semantics are
// unchanged, except that a call whose result does not fit is an error. Non-constant list
// and map literals charge their elements the same way (constant ones are built once,
// when the program is planned).
//
// The same goes for time: a function whose work grows as the product of its inputs'
// sizes (distinct, the sets functions, a string's indexOf) would run for minutes on a
// large parent in one call that neither the deadline nor the cost limit can interrupt.
// Its work is computed from its arguments first, and a call whose work alone exceeds the
// expression's cost limit stops the expression as the cost limit does.

// A sizer returns the bytes a call of its function will build with these arguments:
// exactly, or an upper bound. room is what the budget has left; a sizer may stop
// counting, and return more than room, once it is past it. Arguments of types the
// function does not accept count 0: the call then fails by itself.
type sizer func(args argv, room int64) int64

// growth describes a function that builds a value.
type growth struct {
	// what names the function in messages.
	what string
	size sizer
	// overloads, when set, are the overloads that build something; the function's
	// others (string(int), int + int) are left alone. A call the checker could not
	// resolve to one overload is always planned as a growthCall.
	overloads []string
	// run, when set, replaces the function's implementation by one that charges as it
	// goes (findAll cannot know its result's size before it runs).
	run runner
	// work, when set, is the cost of the call's work in CEL's units, computed from its
	// arguments: the call is refused before it starts when that exceeds the cost limit.
	work func(args argv) uint64
}

// A runner calls a function with its arguments, charging the budget of the evaluation
// vars belongs to (m's when there is none).
type runner func(args argv, vars interpreter.Activation, m Memory) ref.Val

// growthFunctions are the functions, among the libraries of celenv.Library, that build a
// string, bytes, a list or a map larger than a constant, by name.
var growthFunctions = map[string]growth{
	"_+_":                   {what: "+", size: sizeAdd, overloads: []string{"add_string", "add_bytes", "add_list"}},
	"replace":               {what: "replace()", size: sizeReplace},
	"split":                 {what: "split()", size: sizeSplit},
	"join":                  {what: "join()", size: sizeJoin},
	"format":                {what: "format()", size: sizeFormat},
	"strings.quote":         {what: "strings.quote()", size: sizeQuote},
	"base64.encode":         {what: "base64.encode()", size: sizeBase64Encode},
	"base64.decode":         {what: "base64.decode()", size: sizeBase64Decode},
	"lowerAscii":            {what: "lowerAscii()", size: sizeTarget},
	"upperAscii":            {what: "upperAscii()", size: sizeTarget},
	"substring":             {what: "substring()", size: sizeTarget},
	"reverse":               {what: "reverse()", size: sizeTarget},
	"string":                {what: "string()", size: sizeTarget, overloads: []string{"bytes_to_string"}},
	"bytes":                 {what: "bytes()", size: sizeTarget, overloads: []string{"string_to_bytes"}},
	"sort":                  {what: "sort()", size: sizeTarget},
	"@sortByAssociatedKeys": {what: "sortBy()", size: sizeTarget},
	"distinct":              {what: "distinct()", size: sizeTarget, work: workDistinct},
	"optional.unwrap":       {what: "optional.unwrap()", size: sizeTarget},
	"unwrapOpt":             {what: "unwrapOpt()", size: sizeTarget},
	"slice":                 {what: "slice()", size: sizeSlice},
	"flatten":               {what: "flatten()", size: sizeFlatten},
	"lists.range":           {what: "lists.range()", size: sizeRange},
	"cel.@mapInsert":        {what: "a map", size: sizeMapInsert},
	"findAll":               {what: "findAll()", run: findAllWith(nil)},
	// No growth, but work that is the product of the inputs' sizes.
	"sets.contains":   {what: "sets.contains()", work: workProduct(1)},
	"sets.intersects": {what: "sets.intersects()", work: workProduct(1)},
	"sets.equivalent": {what: "sets.equivalent()", work: workProduct(2)},
	"indexOf":         {what: "indexOf()", work: workSearch, overloads: []string{"string_index_of_string", "string_index_of_string_int"}},
	"lastIndexOf":     {what: "lastIndexOf()", work: workSearch, overloads: []string{"string_last_index_of_string", "string_last_index_of_string_int"}},
}

// growthBindings holds the implementations of the growth functions in celenv.Library, by
// overload id and by function name (the dispatch over all overloads), as CEL's planner
// finds them.
var growthBindings = sync.OnceValues(func() (map[string]*functions.Overload, error) {
	env, err := celenv.Library()
	if err != nil {
		return nil, err
	}
	out := map[string]*functions.Overload{}
	for name, fn := range env.Functions() {
		if _, ok := growthFunctions[name]; !ok {
			continue
		}
		bindings, err := fn.Bindings()
		if err != nil {
			return nil, fmt.Errorf("bindings of %s: %w", name, err)
		}
		for _, b := range bindings {
			out[b.Operator] = b
		}
	}
	return out, nil
})

// ProgramOptions are the program options that make a program of an environment built
// on celenv.Library charge the budget of the evaluation it runs in, and refuse a call
// whose work exceeds costLimit.
func (m Memory) ProgramOptions(costLimit uint64) []cel.ProgramOption {
	return []cel.ProgramOption{
		cel.CustomDecoratorV2(func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
			return m.decorate(i, costLimit)
		}),
		// Replaces the Kubernetes library's plan of findAll with a constant pattern
		// (the last optimization given for a function wins), which would drop the
		// growthCall.
		cel.OptimizeRegex(&interpreter.RegexOptimization{Function: "findAll", RegexIndex: 1, Factory: m.planFindAll}),
	}
}

// decorate plans growth calls and non-constant literals so that they charge the
// budget.
func (m Memory) decorate(i interpreter.InterpretableV2, costLimit uint64) (interpreter.InterpretableV2, error) {
	switch node := i.(type) {
	case interpreter.InterpretableCall:
		return m.planGrowth(i, node, costLimit)
	case interpreter.InterpretableConstructor:
		return m.chargeLiteral(i, node), nil
	}
	return i, nil
}

func (m Memory) planGrowth(i interpreter.InterpretableV2, call interpreter.InterpretableCall, costLimit uint64) (interpreter.InterpretableV2, error) {
	g, ok := growthFunctions[call.Function()]
	if !ok || !g.builds(call.OverloadID()) {
		return i, nil
	}
	bindings, err := growthBindings()
	if err != nil {
		return nil, err
	}
	impl := bindings[call.OverloadID()]
	if impl == nil {
		impl = bindings[call.Function()]
	}
	if impl == nil || len(call.Args()) > len(argv{}.v) {
		return nil, fmt.Errorf("no implementation of %s (%s) with %d arguments to bound", call.Function(), call.OverloadID(), len(call.Args()))
	}
	gc := &growthCall{
		id: i.ID(), function: call.Function(), overload: call.OverloadID(), args: call.Args(),
		trait: impl.OperandTrait, nonStrict: impl.NonStrict, what: g.what, run: g.run,
		work: g.work, costLimit: costLimit, mem: m,
	}
	if gc.run == nil {
		gc.run = chargeThen(g, implementation(impl, len(gc.args)))
	}
	return gc, nil
}

// builds reports whether a call of this overload ("" when it is resolved at runtime)
// may build something.
func (g growth) builds(overload string) bool {
	if overload == "" || len(g.overloads) == 0 {
		return true
	}
	for _, o := range g.overloads {
		if o == overload {
			return true
		}
	}
	return false
}

// implementation picks the binding CEL's planner would call for a call with n
// arguments.
func implementation(impl *functions.Overload, n int) func(argv) ref.Val {
	switch {
	case n == 1 && impl.Unary != nil:
		return func(args argv) ref.Val { return impl.Unary(args.v[0]) }
	case n == 2 && impl.Binary != nil:
		return func(args argv) ref.Val { return impl.Binary(args.v[0], args.v[1]) }
	case impl.Function != nil:
		return func(args argv) ref.Val { return impl.Function(args.v[:args.n]...) }
	}
	return nil
}

// chargeThen charges the size g's sizer computes, then calls impl.
func chargeThen(g growth, impl func(argv) ref.Val) runner {
	return func(args argv, vars interpreter.Activation, m Memory) ref.Val {
		if impl == nil {
			return types.NewErr("no such overload: %s", g.what)
		}
		if g.size != nil {
			if err := m.chargeIn(vars, g.size(args, m.room(vars)), g.what); err != nil {
				return types.WrapErr(err)
			}
		}
		return impl(args)
	}
}

// room is what the budget of the evaluation that vars belongs to has left.
func (m Memory) room(vars interpreter.Activation) int64 {
	if b := budgetOf(vars); b != nil {
		return b.Room()
	}
	return m.Default
}

// growthCall is a call of a growth function. It is an InterpretableCall, so that CEL's
// cost tracking counts it as the call it replaces.
type growthCall struct {
	id                 int64
	function, overload string
	args               []interpreter.InterpretableV2
	trait              int
	nonStrict          bool
	what               string
	run                runner
	// work and costLimit: see growth.work.
	work      func(argv) uint64
	costLimit uint64
	mem       Memory
}

var _ interpreter.InterpretableCall = (*growthCall)(nil)

// Eval implements interpreter.Interpretable (see Exec).
func (c *growthCall) Eval(vars interpreter.Activation) ref.Val {
	return c.Exec(interpreter.AsFrame(vars))
}

// Exec evaluates the arguments as CEL's own calls do (an error or unknown argument is
// the result, unless the function is non-strict), then charges and calls.
func (c *growthCall) Exec(vars *interpreter.ExecutionFrame) ref.Val {
	var args argv
	args.n = len(c.args)
	for i, arg := range c.args {
		args.v[i] = arg.Exec(vars)
		// A binary call evaluates both arguments before it looks at either.
		if args.n != 2 && !c.nonStrict && types.IsUnknownOrError(args.v[i]) {
			return args.v[i]
		}
	}
	if !c.nonStrict {
		for _, v := range args.v[:args.n] {
			if types.IsUnknownOrError(v) {
				return v
			}
		}
	}
	arg0 := args.v[0]
	if c.trait != 0 && (!c.nonStrict || !types.IsUnknownOrError(arg0)) && !arg0.Type().HasTrait(c.trait) {
		if arg0.Type().HasTrait(traits.ReceiverType) {
			// A copy: a slice of args would move it to the heap on every call.
			rest := append([]ref.Val(nil), args.v[1:args.n]...)
			return types.LabelErrNode(c.id, arg0.(traits.Receiver).Receive(c.function, c.overload, rest))
		}
		return types.NewErrWithNodeID(c.id, "no such overload: %s", c.function)
	}
	if c.work != nil && c.work(args) > c.costLimit {
		return tooMuchWork(vars)
	}
	return types.LabelErrNode(c.id, c.run(args, vars, c.mem))
}

// tooMuchWork stops the evaluation as CEL does at its cost limit (evaluation.cause then
// sees CEL's cost limit error); outside an evaluation it is an error value.
func tooMuchWork(vars interpreter.Activation) ref.Val {
	const msg = "operation cancelled: actual cost limit exceeded"
	if budgetOf(vars) == nil {
		return types.NewErr(msg)
	}
	panic(interpreter.EvalCancelledError{Cause: interpreter.CostLimitExceeded, Message: msg})
}

// ID implements interpreter.Interpretable.
func (c *growthCall) ID() int64 { return c.id }

// Function implements interpreter.InterpretableCall.
func (c *growthCall) Function() string { return c.function }

// OverloadID implements interpreter.InterpretableCall.
func (c *growthCall) OverloadID() string { return c.overload }

// Args implements interpreter.InterpretableCall.
func (c *growthCall) Args() []interpreter.InterpretableV2 { return c.args }

// planFindAll plans findAll with a constant pattern: compiled once, as the Kubernetes
// library does, and charging as it goes.
func (m Memory) planFindAll(call interpreter.InterpretableCall, pattern string) (interpreter.InterpretableCall, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	gc := &growthCall{id: call.ID(), function: call.Function(), overload: call.OverloadID(), args: call.Args(), what: "findAll()", run: findAllWith(re), mem: m}
	if existing, ok := call.(*growthCall); ok {
		gc.trait, gc.nonStrict, gc.costLimit = existing.trait, existing.nonStrict, existing.costLimit
	}
	return gc, nil
}

// chargedLiteral is a list or map literal with elements computed at evaluation. It
// charges its elements before building.
type chargedLiteral struct {
	interpreter.InterpretableConstructor
	bytes int64
	what  string
	mem   Memory
}

func (m Memory) chargeLiteral(i interpreter.InterpretableV2, lit interpreter.InterpretableConstructor) interpreter.InterpretableV2 {
	vals := lit.InitVals()
	constant := true
	for _, v := range vals {
		if _, ok := v.(interpreter.InterpretableConst); !ok {
			constant = false
			break
		}
	}
	if constant {
		return i
	}
	switch lit.Type() {
	case types.ListType:
		return &chargedLiteral{InterpretableConstructor: lit, bytes: int64(len(vals)) * ElemBytes, what: "a list", mem: m}
	case types.MapType:
		return &chargedLiteral{InterpretableConstructor: lit, bytes: mapBytes + int64(len(vals)/2)*EntryBytes, what: "a map", mem: m}
	}
	return i
}

// Eval implements interpreter.Interpretable (see Exec).
func (l *chargedLiteral) Eval(vars interpreter.Activation) ref.Val {
	return l.Exec(interpreter.AsFrame(vars))
}

// Exec implements interpreter.InterpretableV2: it charges the elements, then builds.
func (l *chargedLiteral) Exec(vars *interpreter.ExecutionFrame) ref.Val {
	if err := l.mem.chargeIn(vars, l.bytes, l.what); err != nil {
		return types.LabelErrNode(l.ID(), types.WrapErr(err))
	}
	return l.InterpretableConstructor.Exec(vars)
}
