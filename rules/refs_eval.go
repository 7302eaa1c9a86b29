package rules

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecel/kubecel/rules/internal/celenv"
	"github.com/kubecel/kubecel/rules/internal/celjson"
	"github.com/kubecel/kubecel/rules/internal/parse"
)

// This file looks a rule's refs up during an evaluation, in dependency order, and
// decides what a missing or failed ref means for the children and status fields that
// read it.

// refOutcome is where one ref stands in an evaluation.
type refOutcome struct {
	// missing lists the required refs, missing, that the ref is or waits for.
	missing []string
	// failed is true when the ref, or a ref it reads, could not be looked up.
	failed bool
}

// lookupRefs looks every ref up and makes `refs` readable to the expressions that follow.
func (ev *evaluation) lookupRefs(parent map[string]any, src RefSource) {
	r := ev.rule
	if len(r.Refs) == 0 {
		return
	}
	values := make(map[string]any, len(r.Refs))
	ev.vars.Refs = celjson.Value(values)
	ev.refOut = make(map[string]refOutcome, len(r.Refs))
	parentNS := stringAt(parent, "metadata", "namespace")
	for _, ref := range r.Refs {
		var blocked refOutcome
		for _, dep := range ref.DependsOn {
			o := ev.refOut[dep]
			blocked.failed = blocked.failed || o.failed
			for _, id := range o.missing {
				if !slices.Contains(blocked.missing, id) {
					blocked.missing = append(blocked.missing, id)
				}
			}
		}
		if blocked.failed || len(blocked.missing) > 0 {
			ev.refOut[ref.ID] = blocked
			continue
		}
		ev.refOut[ref.ID] = ev.lookupRef(ref, parentNS, src, values)
	}
}

// lookupRef computes where one ref reads, checks that the parent may read there, and
// looks the object (or objects) up, storing what it finds in values.
func (ev *evaluation) lookupRef(ref *Ref, parentNS string, src RefSource, values map[string]any) refOutcome {
	// A name, namespace or selector computed from Secret data is never quoted.
	sensitive := ref.SecretName || ev.rule.sens != nil && (ev.rule.sens.parent || ev.rule.sens.readsAny(ref.DependsOn, nil))
	failed := func(field string, err error) refOutcome {
		e := &Error{Rule: ev.rule.Name, Ref: ref.ID, Field: field, Message: err.Error(), Err: err}
		if sensitive {
			e.Message, e.Err = withheld("its name, namespace or selector is computed from it"), withheldErr(err)
		}
		ev.errs = append(ev.errs, e)
		return refOutcome{failed: true}
	}
	rp := ref.compiled
	namespace := parentNS
	if rp.namespace != nil {
		s, ok := ev.refString(rp.namespace)
		if !ok {
			return refOutcome{failed: true}
		}
		if s == "" {
			return failed("namespace", errors.New("the namespace evaluated to an empty string"))
		}
		namespace = s
	}
	if rp.clusterScoped {
		namespace = ""
	}
	isNamespace := ref.GVK.Group == "" && ref.GVK.Kind == "Namespace"
	if !ref.CrossNamespace {
		// Checked at load where the kind's scope is known; here for every kind.
		switch {
		case isNamespace && rp.selector != nil:
			return failed("selector", errors.New("a selector over Namespaces reads every namespace: it needs crossNamespace: true on the ref"))
		case parentNS == "" && !rp.clusterScoped && rp.namespace != nil && ref.Namespace == "" && !ev.ownNamespace(namespace):
			return failed("namespace", errors.New("the parent is cluster-scoped: a namespace computed with ${} can name any namespace, which needs crossNamespace: true on the ref (a Namespace parent's own namespace needs nothing)"))
		case parentNS == "" && !rp.clusterScoped && rp.selector != nil && namespace == "":
			return failed("selector", errors.New("the parent is cluster-scoped: a selector without a namespace reads every namespace, which needs crossNamespace: true on the ref"))
		}
	}
	if parentNS != "" && !ref.CrossNamespace {
		switch {
		case rp.clusterScoped && !isNamespace:
			return failed("kind", fmt.Errorf("%s is cluster-scoped, and the parent is namespaced: reading it needs crossNamespace: true on the ref", ref.GVK.Kind))
		case !rp.clusterScoped && namespace != parentNS:
			return failed("namespace", fmt.Errorf("namespace %q is not the parent's (%q): reading another namespace needs crossNamespace: true on the ref", namespace, parentNS))
		}
	}
	if src == nil {
		return failed("", errors.New("no source of referenced objects was given to the evaluation"))
	}
	lookup := Lookup{Ref: ref.ID, GVK: ref.GVK, Namespace: namespace, Withheld: ref.SecretName}
	if rp.name != nil {
		name, ok := ev.refString(rp.name)
		if !ok {
			return refOutcome{failed: true}
		}
		if name == "" {
			return failed("name", errors.New("the name evaluated to an empty string"))
		}
		if msg := pathSegmentProblem(name); msg != "" {
			return failed("name", fmt.Errorf("invalid name %q: %s", name, msg))
		}
		if isNamespace && rp.clusterScoped && parentNS != "" && !ref.CrossNamespace && name != parentNS {
			return failed("name", fmt.Errorf("the Namespace %q is not the parent's (%q): reading another namespace needs crossNamespace: true on the ref", name, parentNS))
		}
		if namespace == "" && rp.namespaced {
			return failed("namespace", fmt.Errorf("%s is namespaced, and the parent is cluster-scoped: the ref needs a namespace", ref.GVK.Kind))
		}
		lookup.Name = name
		obj, found, err := src.Get(ev.ctx, ref.GVK, namespace, name)
		if err != nil {
			return failed("", fmt.Errorf("look up %s: %w", ObjectName(ref.GVK.GroupKind(), namespace, name), err))
		}
		if found {
			lookup.Found = 1
			values[ref.ID] = ev.coerceRef(ref, obj)
		}
		ev.res.Refs = append(ev.res.Refs, lookup)
		if found || ref.Optional {
			return refOutcome{}
		}
		ev.res.MissingRefs = append(ev.res.MissingRefs, ref.ID)
		return refOutcome{missing: []string{ref.ID}}
	}
	v, present, ok := (&fill{Host: ev, Vars: &ev.vars, At: -1}).Value(rp.selector)
	if !ok {
		return refOutcome{failed: true}
	}
	if !present {
		v = map[string]any{}
	}
	ls, err := labelSelector(v)
	if err == nil {
		lookup.Selector, err = metav1.LabelSelectorAsSelector(ls)
	}
	if err != nil {
		return failed("selector", fmt.Errorf("invalid label selector: %w", err))
	}
	objs, err := src.List(ev.ctx, ref.GVK, namespace, lookup.Selector)
	if err != nil {
		return failed("", fmt.Errorf("list %s matching %q: %w", ObjectName(ref.GVK.GroupKind(), namespace, ""), lookup.Selector, err))
	}
	list := make([]any, len(objs))
	for i, o := range objs {
		list[i] = ev.coerceRef(ref, o)
	}
	values[ref.ID] = list
	lookup.Found = len(objs)
	ev.res.Refs = append(ev.res.Refs, lookup)
	return refOutcome{}
}

// refString evaluates a ref's name or namespace; ok is false when it failed (reported).
func (ev *evaluation) refString(n *node) (string, bool) {
	v, present, ok := (&fill{Host: ev, Vars: &ev.vars, At: -1}).Value(n)
	if !ok {
		return "", false
	}
	s, isString := v.(string)
	if !present || !isString {
		w := where{Rule: ev.rule.Name}
		if n.Prog != nil {
			w = n.Prog.w
		}
		msg := "must evaluate to a string, not " + describeValue(v)
		if n.Prog != nil && n.Prog.sensitive {
			msg = "must evaluate to a string, not " + parse.Describe(v)
		}
		ev.errs = append(ev.errs, &Error{Rule: ev.rule.Name, Ref: w.Ref, Field: string(w.Field), Message: msg})
		return "", false
	}
	return s, true
}

// refsBlock tells whether refs keep an expression from being evaluated: waitOn lists
// the missing required refs (as "refs.<id>") among those it reads or their
// dependencies; failed is true when one of them could not be looked up.
func (ev *evaluation) refsBlock(reads []string) (waitOn []string, failed bool) {
	for _, id := range reads {
		o := ev.refOut[id]
		failed = failed || o.failed
		for _, m := range o.missing {
			if on := celenv.Refs + "." + m; !slices.Contains(waitOn, on) {
				waitOn = append(waitOn, on)
			}
		}
	}
	return waitOn, failed
}

// coerceRef converts the integers a ref's schema declares as doubles, as for the parent.
func (ev *evaluation) coerceRef(ref *Ref, obj map[string]any) any {
	if t := ev.rule.refType(ref); hasDouble(t) {
		v, _ := coerceNumbers(obj, t)
		return v
	}
	return obj
}

// pathSegmentProblem says why a name cannot be one segment of a request path (so that
// a name computed from a parent cannot reach a subresource or another object), or "".
func pathSegmentProblem(name string) string {
	switch {
	case name == "." || name == "..":
		return "may not be '.' or '..'"
	case strings.Contains(name, "/"):
		return "may not contain '/'"
	case strings.Contains(name, "%"):
		return "may not contain '%'"
	}
	return ""
}

// ownNamespace reports whether namespace is the parent's own: the parent is that
// Namespace.
func (ev *evaluation) ownNamespace(namespace string) bool {
	return ev.parentIsNamespace && namespace == ev.parentName
}
