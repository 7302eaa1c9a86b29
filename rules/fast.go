package rules

import (
	"fmt"

	"github.com/google/cel-go/cel"

	"github.com/kubecel/kubecel/rules/internal/celjson"
	"github.com/kubecel/kubecel/rules/internal/tree"
)

// An evalPath computes the objects of children and the status fields from their
// compiled expressions. plainPath evaluates each expression as written, one CEL
// evaluation each. fastPath computes the same values with less work: it evaluates all
// the expressions of a template (or of the status fields) as one CEL list (tree.Batch),
// and splits an expr child's map literal along its constant keys so that CEL does not
// build the map only to have it converted after (exprtmpl.go). Evaluate takes fastPath;
// the tests evaluate every example and test rule along both and compare the results
// (TestPathsAgree), so plainPath is the reference fastPath answers to.
type evalPath interface {
	// object computes the manifest of child ch for vars (forEach element at, or -1).
	// ok is false when it failed; the error is recorded.
	object(ev *evaluation, ch *Child, vars *activation, at int) (obj map[string]any, ok bool)
	// status computes the status fields whose inputs are there (ev.statusReady) into
	// ev.res.Status.
	status(ev *evaluation)
}

// path is the evaluation's path.
func (ev *evaluation) path() evalPath {
	if ev.plain {
		return plainPath{}
	}
	return fastPath{}
}

// plainPath evaluates each expression as written.
type plainPath struct{}

func (plainPath) object(ev *evaluation, ch *Child, vars *activation, at int) (map[string]any, bool) {
	if ch.template != nil {
		return templateObject(ev, &fill{Host: ev, Vars: vars, At: at}, ch, ch.template)
	}
	out, ok := ev.Eval(ch.expr, vars, at)
	if !ok {
		return nil, false
	}
	v, err := celjson.ToJSON(out, ev.budget)
	obj, _ := v.(map[string]any)
	if err != nil || obj == nil {
		if err == nil {
			err = fmt.Errorf("expr must return a map, not %s", out.Type().TypeName())
		}
		ev.Fail(ch.expr, at, err)
		return nil, false
	}
	return obj, true
}

func (plainPath) status(ev *evaluation) {
	statusFields(ev, &fill{Host: ev, Vars: &ev.vars, At: -1})
}

// fastPath evaluates a child's fastChild, and all status fields at once when all are
// there. A batch that fails for any reason leaves each expression to be evaluated on
// its own, which finds the failing one and gives each its own cost limit, as plainPath
// does.
type fastPath struct{}

// fastChild is what fastPath evaluates for a child: its template, or an expr child's
// split map literal, and the batch of their expressions (nil when not worth it). The
// template is nil when fastPath has nothing to gain: an expr that cannot be split, a
// template without a batch.
type fastChild struct {
	template *node
	batch    *tree.Batch
}

func (fastPath) object(ev *evaluation, ch *Child, vars *activation, at int) (map[string]any, bool) {
	if ch.fast.template == nil {
		return plainPath{}.object(ev, ch, vars, at)
	}
	f := &fill{Host: ev, Vars: vars, At: at, Batched: ch.fast.batch.Run(ev.ctx, vars)}
	if ch.expr == nil && f.Batched == nil {
		// A template child whose batch failed is evaluated as written.
		return plainPath{}.object(ev, ch, vars, at)
	}
	ev.fastRuns++
	return templateObject(ev, f, ch, ch.fast.template)
}

func (fastPath) status(ev *evaluation) {
	f := &fill{Host: ev, Vars: &ev.vars, At: -1}
	all := true
	for _, sf := range ev.rule.status {
		all = all && ev.statusReady(sf)
	}
	if all {
		if f.Batched = ev.rule.fastStatus.Run(ev.ctx, &ev.vars); f.Batched != nil {
			ev.fastRuns++
		}
	}
	statusFields(ev, f)
}

// fastChild compiles what fastPath evaluates for ch.
func (c *compiler) fastChild(env *cel.Env, ch *Child) fastChild {
	fc := fastChild{template: ch.template}
	if ch.expr != nil {
		fc.template = c.exprTemplate(env, ch.expr)
	}
	if fc.template != nil {
		fc.batch = c.newBatch(env, fc.template)
	}
	if ch.expr == nil && fc.batch == nil {
		// A template without a batch has nothing to gain: plainPath evaluates it.
		fc.template = nil
	}
	return fc
}

// fastStatus compiles the batch of a rule's status fields.
func (c *compiler) fastStatus(env *cel.Env, fields []statusField) *tree.Batch {
	roots := make([]*node, len(fields))
	for i, f := range fields {
		roots[i] = f.value
	}
	return c.newBatch(env, roots...)
}

// newBatch compiles the expressions below roots into one batch (tree.BatchSource). It
// returns nil when there is nothing to gain or the combined source does not compile
// (for example over the parser's size limit).
func (c *compiler) newBatch(env *cel.Env, roots ...*node) *tree.Batch {
	src, n := tree.BatchSource(roots...)
	if n < 2 || env == nil {
		return nil
	}
	checked, iss := c.envs.Compile(env, src)
	if iss.Err() != nil {
		return nil
	}
	prg, err := c.program(env, src, checked)
	if err != nil {
		return nil
	}
	return tree.NewBatch(prg)
}

// templateObject evaluates template n of child ch into its object.
func templateObject(ev *evaluation, f *fill, ch *Child, n *node) (map[string]any, bool) {
	v, present, ok := f.Value(n)
	if !ok {
		return nil, false
	}
	obj, _ := v.(map[string]any)
	if !present || obj == nil {
		ev.errs = append(ev.errs, &Error{Rule: ev.rule.Name, Child: ch.ID, Message: forEachPrefix(f.At) + "the template produced no object"})
		return nil, false
	}
	return obj, true
}

// statusFields evaluates the status fields whose inputs are there into ev.res.Status.
func statusFields(ev *evaluation, f *fill) {
	for _, sf := range ev.rule.status {
		if !ev.statusReady(sf) {
			continue
		}
		if v, present, ok := f.Value(sf.value); ok && present {
			ev.res.Status[sf.name] = v
		}
	}
}
