package rules

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubecel/kubecel/rules/internal/celjson"
	"github.com/kubecel/kubecel/rules/internal/format"
)

// This file compiles a rule's rollout block (package parse reads it) and evaluates its
// healthy expression:
//
//	rollout:
//	  steps: ["1%", "10%", "50%"]   # a final 100% is implied
//	  pause: 2m                     # default 0
//	  progressDeadline: 10m         # default 10m
//	  healthy: "parents.all(p, p.status.replicas > 0)"
//	  onFailure: Rollback           # default Pause
//
// What the steps mean to the controller (which parents take each step, when a step
// counts as failed) is the engine's; this package checks the block and evaluates
// healthy.

// OnFailure is what a rollout does with a step that is not healthy by its deadline.
type OnFailure string

// The failure policies of a rollout.
const (
	OnFailurePause    OnFailure = format.OnFailurePause
	OnFailureRollback OnFailure = format.OnFailureRollback
)

// DefaultProgressDeadline is the progressDeadline of a rollout that sets none.
const DefaultProgressDeadline = 10 * time.Minute

// fieldHealthy is the path of the healthy expression in a rule.
const fieldHealthy = "rollout.healthy"

// Rollout is a rule's rollout policy: an edit of the rule reaches its parents in steps.
// It is immutable and safe for concurrent use.
type Rollout struct {
	// Steps are the percents of the rule's parents at the new revision after each step,
	// strictly increasing; the last is 100 (added when the rule's last step is less).
	Steps []float64
	// Pause is how long to wait after a step is healthy before the next (0 by default).
	Pause time.Duration
	// ProgressDeadline is how long a step may take to become healthy
	// (DefaultProgressDeadline by default).
	ProgressDeadline time.Duration
	// OnFailure is what happens to a step not healthy by its deadline (OnFailurePause by
	// default).
	OnFailure OnFailure
	// Canaries, when set, are the parents that take the first steps.
	Canaries *Canaries

	// rule is the rule the policy belongs to: its name, timeout and what it reads of
	// Secrets, for evaluating healthy.
	rule *Rule
	// healthy is the compiled healthy expression; nil when the rule sets none.
	healthy *program
}

// Healthy evaluates the rule's rollout.healthy over the parents of the steps taken so far
// (each an unstructured object's content), under the rule's cost limit and evaluation
// timeout; true when the rule sets no healthy. An error is an ErrorList that names the
// rule, the field rollout.healthy and the expression; when the parents are Secrets, its
// text is withheld as for Evaluate.
func (ro *Rollout) Healthy(ctx context.Context, parents []map[string]any) (healthy bool, err error) {
	if ro == nil || ro.healthy == nil {
		return true, nil
	}
	r := ro.rule
	b := memory.Budget(r.maxEvalBytes)
	ev := &evaluation{rule: r, res: &Result{}, budget: &b}
	defer func() {
		if p := recover(); p != nil {
			healthy, err = false, ErrorList{{Rule: r.Name, Field: fieldHealthy, Expr: ro.healthy.source, Message: fmt.Sprintf("internal error: %v", p)}}
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	ev.ctx = ctx
	list := make([]any, len(parents))
	for i, p := range parents {
		var v any = p
		if r.coerce {
			v, _ = coerceNumbers(p, r.parentType)
		}
		list[i] = v
	}
	healthy, ok := ev.condition(ro.healthy, &activation{Parents: celjson.Value(list), Bytes: ev.budget}, -1)
	if !ok {
		return false, ev.errs
	}
	return healthy, nil
}

// HealthyExpression is the CEL text of the rule's rollout.healthy; "" when it sets none.
func (ro *Rollout) HealthyExpression() string {
	if ro == nil || ro.healthy == nil {
		return ""
	}
	return ro.healthy.src
}

// Canaries are the parents a rollout takes first: in one of Namespaces (when there are
// any) and matching Selector (when there is one). Chosen by the rule, not by the
// parents: a parent's own label does not make it a canary.
type Canaries struct {
	Namespaces []string
	Selector   labels.Selector
}

// IsCanary reports whether the parent in namespace with these labels is a canary of the
// rollout; false when the rollout names none.
func (ro *Rollout) IsCanary(namespace string, lbls map[string]string) bool {
	if ro == nil || ro.Canaries == nil {
		return false
	}
	c := ro.Canaries
	if len(c.Namespaces) > 0 && !slices.Contains(c.Namespaces, namespace) {
		return false
	}
	return c.Selector == nil || c.Selector.Matches(labels.Set(lbls))
}

// compileRollout compiles a rule's rollout block into r.Rollout.
func (c *compiler) compileRollout(r *Rule, src *rolloutSource, w where) {
	ro := &Rollout{
		Steps:            src.Steps,
		Pause:            src.Pause,
		ProgressDeadline: cmp.Or(src.ProgressDeadline, DefaultProgressDeadline),
		OnFailure:        OnFailure(cmp.Or(src.OnFailure, format.OnFailurePause)),
		rule:             r,
	}
	if cs := src.Canaries; cs != nil {
		ro.Canaries = &Canaries{Namespaces: cs.Namespaces, Selector: cs.Selector}
	}
	if !r.HasStatus {
		fail(c.errs, w, "needs the rule's status block: a step is healthy when its parents' Ready and Synced conditions, which only a rule with a status block writes, say so")
	}
	if src.Healthy != "" {
		env, err := c.envs.Rollout()
		if err != nil {
			c.fail(w.Key("healthy"), src.Healthy, 0, "cannot declare parents: "+err.Error())
			return
		}
		ro.healthy = c.compile(env, w.Key("healthy"), src.Healthy, src.Healthy, 0, wantBool)
	}
	r.Rollout = ro
}
