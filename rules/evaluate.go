package rules

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/kubecel/kubecel/rules/internal/celbudget"
	"github.com/kubecel/kubecel/rules/internal/celjson"
)

// ErrCostLimit is wrapped by evaluation errors of expressions that exceeded the runtime
// cost limit. Errors of expressions stopped by the deadline wrap
// context.DeadlineExceeded (or the context's own error).
var ErrCostLimit = errors.New("cost limit exceeded")

// childState is where a child stands in one evaluation.
type childState uint8

const (
	// stateExcluded: its when is false, or it reads an excluded child.
	stateExcluded childState = iota
	stateWaiting
	stateFailed
	// statePending: evaluated, but not every object is observed yet.
	statePending
	// stateObserved: every object is observed; children.<id> is set.
	stateObserved
	// stateReady: observed, and every object passes readyWhen.
	stateReady
)

// Evaluate computes the desired children and status of one parent. It never panics and
// honours ctx's deadline, the rule's evaluation timeout and the runtime cost limit. A
// non-nil error is an ErrorList describing every expression that failed (naming rule,
// child, field and expression); the Result is still filled with everything that
// evaluated, and the caller must not prune in that case. When the parent would have
// more children than r.MaxChildren, Evaluate returns a nil Result and a *LimitError.
func (r *Rule) Evaluate(ctx context.Context, parent map[string]any, observed Observed) (*Result, error) {
	return r.EvaluateWithRefs(ctx, parent, observed, nil)
}

// EvaluateWithRefs is Evaluate for a rule that reads refs: it looks each ref up in refs
// first (Result.Refs lists the lookups, Result.MissingRefs the required refs that do not
// exist). A failed lookup is an evaluation error naming the ref; refs may be nil for a
// rule without refs.
func (r *Rule) EvaluateWithRefs(ctx context.Context, parent map[string]any, observed Observed, refs RefSource) (*Result, error) {
	return r.evaluate(ctx, parent, observed, refs, false).outcome()
}

// evaluate runs one evaluation, along plainPath when plain is true (the tests'
// reference), else along fastPath.
func (r *Rule) evaluate(ctx context.Context, parent map[string]any, observed Observed, refs RefSource, plain bool) *evaluation {
	// Room for a few forEach elements spares most slice growth.
	size := len(r.Children) + 4
	ev := &evaluation{rule: r, plain: plain, observed: observed, res: &Result{Children: make([]Desired, 0, size)}}
	ev.budgetStore = memory.Budget(r.maxEvalBytes)
	ev.budget = &ev.budgetStore
	ev.matched = make([]map[string]any, 0, size)
	ev.claims.list = make([]claimEntry, 0, size)
	defer func() {
		if p := recover(); p != nil {
			ev.limit = nil
			ev.errs = append(ev.errs, &Error{Rule: r.Name, Message: fmt.Sprintf("internal error: %v", p)})
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	ev.ctx = ctx
	ev.run(parent, refs)
	return ev
}

// outcome is what Evaluate returns for the evaluation.
func (ev *evaluation) outcome() (*Result, error) {
	if ev.limit != nil {
		return nil, ev.limit
	}
	return ev.res, ev.errs.errorsOrNil()
}

// evaluation is the state of one Evaluate call.
type evaluation struct {
	ctx  context.Context
	rule *Rule
	// parentNamespace is the parent's namespace ("" when cluster-scoped); parentName its
	// name; parentIsNamespace whether it is a core Namespace.
	parentNamespace, parentName string
	parentIsNamespace           bool
	// plain is true for an evaluation along plainPath, false along fastPath (path).
	plain bool
	// fastRuns counts the objects and status blocks fastPath computed its own way.
	fastRuns int32
	observed Observed
	res      *Result
	errs     ErrorList
	// vars holds parent and children for every expression.
	vars activation
	// children is what `children` reads: observed objects by child id.
	children map[string]any
	// states holds each child's state, by position in rule.Children.
	states []childState
	// matched holds the observed object of each desired child in res.Children (nil when
	// not observed), in the same order.
	matched []map[string]any
	// claims detects two children that produce the same object.
	claims claimSet
	// limit is set when the parent has too many children; evaluation stops there.
	limit *LimitError
	// refOut holds each ref's outcome, by id; nil for a rule without refs.
	refOut map[string]refOutcome
	// budget is what the evaluation may still build (budget.go): budgetStore, or the
	// budget of the rollout's check.
	budget      *celbudget.Budget
	budgetStore celbudget.Budget
	// observedIndex holds, for a child with many observed objects (a large forEach),
	// its objects by group, kind and name, built on first use (observedOf).
	observedIndex map[string]map[observedName][]map[string]any
}

func (ev *evaluation) run(parent map[string]any, refs RefSource) {
	r := ev.rule
	if err := ev.ctx.Err(); err != nil {
		ev.errs = append(ev.errs, &Error{Rule: r.Name, Message: ev.cause(err).Error(), Err: err})
		return
	}
	var p any = parent
	if r.coerce {
		p, _ = coerceNumbers(parent, r.parentType)
	}
	md, _ := parent["metadata"].(map[string]any)
	ev.parentNamespace, _ = md["namespace"].(string)
	ev.parentName, _ = md["name"].(string)
	ev.parentIsNamespace = parent["apiVersion"] == "v1" && parent["kind"] == "Namespace"
	ev.children = make(map[string]any, len(r.Children))
	ev.states = make([]childState, len(r.Children))
	ev.vars = activation{
		ParentObject: celjson.Value(p),
		Children:     celjson.Value(ev.children),
		Bytes:        ev.budget,
	}
	if r.when != nil {
		include, ok := ev.condition(r.when, &ev.vars, -1)
		if !ok {
			return
		}
		if !include {
			ev.res.Skip = true
			return
		}
	}
	ev.lookupRefs(parent, refs)
	for i, ch := range r.Children {
		if ev.states[i] = ev.child(ch); ev.limit != nil {
			return
		}
	}
	ev.status()
	ev.res.Ready = len(ev.res.Waiting) == 0 && len(ev.res.Failed) == 0 && len(ev.res.MissingRefs) == 0
	for _, d := range ev.res.Children {
		ev.res.Ready = ev.res.Ready && d.Ready
	}
}

// child evaluates one child and returns its state.
func (ev *evaluation) child(ch *Child) childState {
	waitOn, refFailed := ev.refsBlock(ch.refReads)
	if refFailed {
		ev.res.Failed = append(ev.res.Failed, ch.ID)
		return stateFailed
	}
	if len(waitOn) > 0 {
		ev.res.Waiting = append(ev.res.Waiting, Waiting{ID: ch.ID, On: waitOn})
		return stateWaiting
	}
	var missing []string
	for i, dep := range ch.depIndex {
		switch ev.states[dep] {
		case stateExcluded:
			return stateExcluded
		case stateReady:
		default:
			missing = append(missing, ch.DependsOn[i])
		}
	}
	if len(missing) > 0 {
		ev.res.Waiting = append(ev.res.Waiting, Waiting{ID: ch.ID, On: missing})
		return stateWaiting
	}
	if ch.when != nil {
		include, ok := ev.condition(ch.when, &ev.vars, -1)
		if !ok {
			ev.res.Failed = append(ev.res.Failed, ch.ID)
			return stateFailed
		}
		if !include {
			return stateExcluded
		}
	}
	start := len(ev.res.Children)
	if !ev.objects(ch) {
		ev.res.Children, ev.matched = ev.res.Children[:start], ev.matched[:start]
		ev.res.Failed = append(ev.res.Failed, ch.ID)
		return stateFailed
	}
	state := stateReady
	for _, d := range ev.res.Children[start:] {
		switch {
		case !d.Observed:
			return statePending
		case !d.Ready:
			state = stateObserved
		}
	}
	matched := ev.matched[start:]
	if !ch.ForEach {
		ev.children[ch.ID] = matched[0]
		return state
	}
	list := make([]any, len(matched))
	for i, m := range matched {
		list[i] = m
	}
	ev.children[ch.ID] = list
	return state
}

// objects appends the child's desired objects to the result; false when any failed.
func (ev *evaluation) objects(ch *Child) bool {
	if !ch.ForEach {
		if ev.overLimit(ch, 1) {
			return false
		}
		return ev.object(ch, &ev.vars, -1)
	}
	out, ok := ev.Eval(ch.forEach, &ev.vars, -1)
	if !ok {
		return false
	}
	list, isList := out.(traits.Lister)
	if !isList {
		ev.Fail(ch.forEach, -1, fmt.Errorf("forEach must evaluate to a list, not %s", out.Type().TypeName()))
		return false
	}
	n, _ := list.Size().(types.Int)
	if ev.overLimit(ch, int(n)) {
		return false
	}
	ok = true
	for i := range int(n) {
		vars := ev.vars
		vars.Each, vars.Index = list.Get(types.Int(i)), types.Int(i)
		ok = ev.object(ch, &vars, i) && ok
	}
	return ok
}

// object builds one desired object, matches it with the observed ones and checks
// whether it is ready.
func (ev *evaluation) object(ch *Child, vars *activation, index int) bool {
	at := index
	obj, ok := ev.path().object(ev, ch, vars, at)
	if !ok {
		return false
	}
	key, err := checkObject(ch, obj)
	if err == nil {
		err = ev.claim(key, ch.ID)
	}
	if err != nil {
		msg := err.Error()
		if ev.rule.sens != nil && ev.rule.sens.derived[ch.ID] {
			msg = withheld(fmt.Sprintf("the object of child %q is computed from it", ch.ID))
		}
		ev.errs = append(ev.errs, &Error{Rule: ev.rule.Name, Child: ch.ID, Message: forEachPrefix(at) + msg})
		return false
	}
	d := Desired{ID: ch.ID, Index: index, Object: obj}
	matched := findObserved(key, ev.observedOf(ch.ID, key), ev.parentNamespace)
	if matched != nil {
		d.Observed, d.Ready = true, true
		if ch.readyWhen != nil {
			ready := *vars
			ready.Self = celjson.Value(matched)
			d.Ready, _ = ev.condition(ch.readyWhen, &ready, at)
		}
	}
	ev.res.Children = append(ev.res.Children, d)
	ev.matched = append(ev.matched, matched)
	return true
}

// status evaluates the status fields whose inputs are there (statusReady).
func (ev *evaluation) status() {
	if !ev.rule.HasStatus {
		return
	}
	ev.res.Status = make(map[string]any, len(ev.rule.status))
	ev.path().status(ev)
}

// statusReady reports whether a status field's inputs are there: its refs found, and
// the children it reads observed.
func (ev *evaluation) statusReady(f statusField) bool {
	if waitOn, failed := ev.refsBlock(f.refReads); failed || len(waitOn) > 0 {
		return false
	}
	for _, id := range f.reads {
		if _, observed := ev.children[id]; !observed {
			return false
		}
	}
	return true
}

// condition evaluates a bool expression; ok is false when it failed.
func (ev *evaluation) condition(p *program, vars *activation, at int) (value, ok bool) {
	out, ok := ev.Eval(p, vars, at)
	if !ok {
		return false, false
	}
	b, isBool := out.(types.Bool)
	if !isBool {
		ev.Fail(p, at, fmt.Errorf("must evaluate to a bool, not %s", out.Type().TypeName()))
		return false, false
	}
	return bool(b), true
}

// Eval runs one program; ok is false when it failed, and the error is recorded. It and
// Fail make the evaluation the tree.Host of the template trees it fills.
func (ev *evaluation) Eval(p *program, vars *activation, at int) (ref.Val, bool) {
	out, _, err := p.prg.ContextEval(ev.ctx, vars)
	if err != nil {
		ev.Fail(p, at, ev.cause(err))
		return nil, false
	}
	return out, true
}

// cause says why an expression stopped: the cost limit, the deadline, or its own error.
func (ev *evaluation) cause(err error) error {
	if refused := ev.budget.TakeRefused(); refused != nil {
		return refused
	}
	if errors.Is(err, ErrMemoryLimit) {
		return err
	}
	if strings.Contains(err.Error(), "cost limit exceeded") {
		return fmt.Errorf("%w: the expression did more work than its limit allows; iterate over fewer elements", ErrCostLimit)
	}
	if ctxErr := ev.ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return fmt.Errorf("evaluation stopped after the %s deadline: %w", ev.rule.timeout, ctxErr)
		}
		return fmt.Errorf("evaluation stopped: %w", ctxErr)
	}
	return err
}

// Fail records a failed expression; p may be nil for a problem with a whole object.
func (ev *evaluation) Fail(p *program, at int, err error) {
	e := &Error{Rule: ev.rule.Name, Message: forEachPrefix(at) + err.Error(), Err: err}
	if p != nil {
		e.Child, e.Ref, e.Field, e.Expr = p.w.Child, p.w.Ref, string(p.w.Field), p.source
		if p.sensitive && !quotesNothing(err) {
			e.Message, e.Err = forEachPrefix(at)+withheld(ev.rule.sens.what(p)), withheldErr(err)
		} else {
			e.Message += p.selections.Hint(err)
		}
	}
	ev.errs = append(ev.errs, e)
}

// forEachPrefix starts the message of an error in forEach element at (none when -1).
func forEachPrefix(at int) string {
	if at < 0 {
		return ""
	}
	return fmt.Sprintf("forEach index %d: ", at)
}
