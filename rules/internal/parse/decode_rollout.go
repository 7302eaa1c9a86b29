package parse

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecel/kubecel/rules/internal/format"
)

// This file reads a rule's rollout block and a child's lifecycle block.

// lifecycle reads a child's optional lifecycle block.
func (d *decoder) lifecycle(m map[string]any, w Where) Lifecycle {
	v, ok := m["lifecycle"]
	if !ok || v == nil {
		return Lifecycle{}
	}
	w = w.Key("lifecycle")
	lm := d.asMap(v, w)
	if lm == nil {
		return Lifecycle{}
	}
	d.unknown(lm, w, format.Keys[format.Lifecycle]()...)
	return Lifecycle{
		KeepOnRemove:       d.policy(lm, "onRemove", w),
		KeepOnParentDelete: d.policy(lm, "onParentDelete", w),
	}
}

// policy reads Delete or Keep; it returns whether it is Keep.
func (d *decoder) policy(m map[string]any, key string, w Where) bool {
	switch s := d.str(m, key, w, false); s {
	case "", format.PolicyDelete:
		return false
	case format.PolicyKeep:
		return true
	default:
		d.fail(w.Key(key), "must be "+format.PolicyDelete+" or "+format.PolicyKeep+", not "+strconv.Quote(s))
		return false
	}
}

var stepPattern = regexp.MustCompile(format.StepPattern)

// rollout reads a rule's optional rollout block; nil when it has none.
func (d *decoder) rollout(m map[string]any, w Where) *Rollout {
	v, ok := m["rollout"]
	if !ok || v == nil {
		return nil
	}
	w = w.Key("rollout")
	rm := d.object(v, w, format.Keys[format.Rollout]()...)
	if rm == nil {
		return nil
	}
	ro := &Rollout{Steps: d.steps(rm, w)}
	if pause, set := d.duration(rm, "pause", w); set && pause < 0 {
		d.fail(w.Key("pause"), fmt.Sprintf("must not be negative, not %q", rm["pause"]))
	} else {
		ro.Pause = pause
	}
	if deadline, set := d.duration(rm, "progressDeadline", w); set && deadline <= 0 {
		d.fail(w.Key("progressDeadline"), fmt.Sprintf("must be more than 0, not %q", rm["progressDeadline"]))
	} else if set {
		ro.ProgressDeadline = deadline
	}
	ro.Healthy = d.str(rm, "healthy", w, false)
	switch s := d.str(rm, "onFailure", w, false); s {
	case "", format.OnFailurePause, format.OnFailureRollback:
		ro.OnFailure = s
	default:
		d.fail(w.Key("onFailure"), fmt.Sprintf("must be %s or %s, not %q", format.OnFailurePause, format.OnFailureRollback, s))
	}
	ro.Canaries = d.canaries(rm, w)
	return ro
}

// canaries reads a rollout's optional canaries block.
func (d *decoder) canaries(m map[string]any, w Where) *Canaries {
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
			d.fail(w.Key("namespaces").Index(i), "must be a namespace name, not "+Describe(ns))
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
func (d *decoder) steps(m map[string]any, w Where) []float64 {
	w = w.Key("steps")
	const example = `such as "10%"`
	v, set := m["steps"]
	list, isList := v.([]any)
	switch {
	case !set || v == nil:
		d.fail(w, `required: the percent of the parents at the new revision after each step, such as ["10%", "50%", "100%"]`)
		return nil
	case !isList:
		d.fail(w, "must be a list of percents "+example+", not "+Describe(v))
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
			d.fail(iw, "must be a percent "+example+", not "+Describe(item))
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
func (d *decoder) duration(m map[string]any, key string, w Where) (dur time.Duration, set bool) {
	v, ok := m[key]
	if !ok || v == nil {
		return 0, false
	}
	s, isString := v.(string)
	if !isString {
		d.fail(w.Key(key), `must be a string holding a duration such as "2m", not `+Describe(v))
		return 0, false
	}
	dur, err := time.ParseDuration(s)
	if err != nil {
		d.fail(w.Key(key), fmt.Sprintf(`must be a duration such as "2m" or "1h30m", not %q`, s))
		return 0, false
	}
	return dur, true
}
