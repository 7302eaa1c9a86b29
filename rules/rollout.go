package rules

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubecel/kubecel/rules/internal/celjson"
	"github.com/kubecel/kubecel/rules/internal/format"
	"github.com/kubecel/kubecel/rules/internal/parse"
)

// This file reads a rule's rollout block and compiles and evaluates its healthy
// expression:
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

// rolloutSource is a rule's rollout block as written, with its defaults.
type rolloutSource struct {
	steps            []float64
	pause            time.Duration
	progressDeadline time.Duration
	healthy          string
	onFailure        OnFailure
	canaries         *Canaries
}

var stepPattern = regexp.MustCompile(format.StepPattern)

// rollout reads a rule's optional rollout block; nil when it has none.
func (d *decoder) rollout(m map[string]any, w where) *rolloutSource {
	v, ok := m["rollout"]
	if !ok || v == nil {
		return nil
	}
	w = w.Key("rollout")
	rm := d.object(v, w, format.Keys[format.Rollout]()...)
	if rm == nil {
		return nil
	}
	ro := &rolloutSource{steps: d.steps(rm, w), progressDeadline: DefaultProgressDeadline, onFailure: OnFailurePause}
	if pause, set := d.duration(rm, "pause", w); set && pause < 0 {
		d.fail(w.Key("pause"), fmt.Sprintf("must not be negative, not %q", rm["pause"]))
	} else {
		ro.pause = pause
	}
	if deadline, set := d.duration(rm, "progressDeadline", w); set && deadline <= 0 {
		d.fail(w.Key("progressDeadline"), fmt.Sprintf("must be more than 0, not %q", rm["progressDeadline"]))
	} else if set {
		ro.progressDeadline = deadline
	}
	ro.healthy = d.str(rm, "healthy", w, false)
	switch s := d.str(rm, "onFailure", w, false); s {
	case "", format.OnFailurePause:
	case format.OnFailureRollback:
		ro.onFailure = OnFailureRollback
	default:
		d.fail(w.Key("onFailure"), fmt.Sprintf("must be %s or %s, not %q", OnFailurePause, OnFailureRollback, s))
	}
	ro.canaries = d.canaries(rm, w)
	return ro
}

// canaries reads a rollout's optional canaries block.
func (d *decoder) canaries(m map[string]any, w where) *Canaries {
	v, ok := m["canaries"]
	if !ok || v == nil {
		return nil
	}
	w = w.Key("canaries")
	cm := d.object(v, w, format.Keys[format.Canaries]()...)
	if cm == nil {
		return nil
	}
	c := &Canaries{}
	for i, ns := range d.list(cm, "namespaces", w) {
		s, ok := ns.(string)
		if !ok || s == "" {
			d.fail(w.Key("namespaces").Index(i), "must be a namespace name, not "+parse.Describe(ns))
			continue
		}
		c.Namespaces = append(c.Namespaces, s)
	}
	if sel, ok := cm["selector"]; ok && sel != nil {
		if d.object(sel, w.Key("selector"), selectorKeys...) != nil {
			if ls := d.selector(sel, w.Key("selector")); ls != nil {
				s, err := metav1.LabelSelectorAsSelector(ls)
				if err != nil {
					d.fail(w.Key("selector"), "invalid label selector: "+err.Error())
				} else {
					c.Selector = s
				}
			}
		}
	}
	_, hasNamespaces := cm["namespaces"]
	_, hasSelector := cm["selector"]
	if !hasNamespaces && !hasSelector {
		d.fail(w, "name the canaries: namespaces, a selector, or both")
	}
	if len(c.Namespaces) == 0 && c.Selector == nil {
		return nil
	}
	return c
}

// steps reads the steps of a rollout: percents, each more than 0%, at most 100% and more
// than the one before. A final 100 is added when the last is less.
func (d *decoder) steps(m map[string]any, w where) []float64 {
	w = w.Key("steps")
	const example = `such as "10%"`
	v, set := m["steps"]
	list, isList := v.([]any)
	switch {
	case !set || v == nil:
		d.fail(w, `required: the percent of the parents at the new revision after each step, such as ["10%", "50%", "100%"]`)
		return nil
	case !isList:
		d.fail(w, "must be a list of percents "+example+", not "+parse.Describe(v))
		return nil
	case len(list) == 0:
		d.fail(w, `must not be empty: list the percent of the parents at the new revision after each step, such as ["10%", "50%", "100%"]`)
		return nil
	}
	var out []float64
	var last string
	for i, item := range list {
		iw := w.Index(i)
		s, isString := item.(string)
		if !isString {
			d.fail(iw, "must be a percent "+example+", not "+parse.Describe(item))
			continue
		}
		if !stepPattern.MatchString(s) {
			d.fail(iw, "must be a percent "+example+", not "+strconv.Quote(s))
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
		switch {
		case err != nil:
			d.fail(iw, "must be a percent "+example+", not "+strconv.Quote(s))
		case n <= 0:
			d.fail(iw, fmt.Sprintf("must be more than 0%%, not %q", s))
		case n > 100:
			d.fail(iw, fmt.Sprintf("must be at most 100%%, not %q", s))
		case len(out) > 0 && n <= out[len(out)-1]:
			d.fail(iw, fmt.Sprintf("must be more than the step before it (%q), not %q", last, s))
		default:
			out, last = append(out, n), s
		}
	}
	if len(out) > 0 && out[len(out)-1] < 100 {
		out = append(out, 100)
	}
	return out
}

// duration reads an optional Go duration; set is false when the field is absent or
// wrong (which it reports).
func (d *decoder) duration(m map[string]any, key string, w where) (dur time.Duration, set bool) {
	v, ok := m[key]
	if !ok || v == nil {
		return 0, false
	}
	s, isString := v.(string)
	if !isString {
		d.fail(w.Key(key), `must be a string holding a duration such as "2m", not `+parse.Describe(v))
		return 0, false
	}
	dur, err := time.ParseDuration(s)
	if err != nil {
		d.fail(w.Key(key), fmt.Sprintf(`must be a duration such as "2m" or "1h30m", not %q`, s))
		return 0, false
	}
	return dur, true
}

// compileRollout compiles a rule's rollout block into r.Rollout.
func (c *compiler) compileRollout(r *Rule, src *rolloutSource, w where) {
	ro := &Rollout{
		Steps:            src.steps,
		Pause:            src.pause,
		ProgressDeadline: src.progressDeadline,
		OnFailure:        src.onFailure,
		Canaries:         src.canaries,
		rule:             r,
	}
	if !r.HasStatus {
		fail(c.errs, w, "needs the rule's status block: a step is healthy when its parents' Ready and Synced conditions, which only a rule with a status block writes, say so")
	}
	if src.healthy != "" {
		env, err := c.envs.Rollout()
		if err != nil {
			c.fail(w.Key("healthy"), src.healthy, 0, "cannot declare parents: "+err.Error())
			return
		}
		ro.healthy = c.compile(env, w.Key("healthy"), src.healthy, src.healthy, 0, wantBool)
	}
	r.Rollout = ro
}
