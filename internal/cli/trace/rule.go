package trace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// trace reads the parent and traces every rule that serves its resource.
func (o *Options) trace(ctx context.Context, streams clikit.Streams, target traceTarget) (*traceDoc, error) {
	s, err := o.setup(ctx, streams, target.typ)
	if err != nil {
		return nil, err
	}
	ns, err := o.parentNamespace(s.mapping)
	if err != nil {
		return nil, err
	}
	parent, err := s.client.resource(s.mapping, ns).Get(ctx, target.name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%s not found", rules.ObjectName(s.mapping.GroupVersionKind.GroupKind(), ns, target.name))
		}
		return nil, fmt.Errorf("read the parent: %w", err)
	}
	id, err := s.rules.Identity(ctx, s.cfg, &o.Identity)
	if err != nil {
		return nil, err
	}
	doc := &traceDoc{Parent: objectOf(parent), Rules: []traceRule{}, RulesFrom: s.rules.From}
	var notes []string
	for _, r := range s.served {
		v, err := s.version(ctx, r, parent)
		if err != nil {
			return nil, err
		}
		t := ruleTracer{c: s.client, id: id, rule: v.rule, namespaced: s.mapping.Scope.Name() != meta.RESTScopeNameRoot}
		tr := t.trace(ctx, parent)
		if v.rev != nil {
			tr.Revision, tr.RevisionHash = v.rev.Number, v.rev.Hash
			notes = append(notes, v.note)
		}
		doc.Rules = append(doc.Rules, tr)
	}
	doc.header = traceHeader(s.rules, notes)
	return doc, nil
}

// ruleTracer traces one rule for one parent.
type ruleTracer struct {
	c          *traceClient
	id         *rules.Identity
	rule       *rules.Rule
	namespaced bool
	// Filled by trace.
	pref   rules.ParentRef
	proven []*unstructured.Unstructured
	out    traceRule
}

func (t *ruleTracer) trace(ctx context.Context, parent *unstructured.Unstructured) traceRule {
	r := t.rule
	t.out = traceRule{Name: r.Name, WritesStatus: r.HasStatus, Children: []traceChild{}}
	if gvr := r.Parent.GVR; gvr.Version != parent.GroupVersionKind().Version {
		// The rule reads the parent in its own version.
		m, err := t.c.mapping(gvr.GroupVersion().WithKind(parent.GetKind()))
		if err == nil {
			parent, err = t.c.resource(m, parent.GetNamespace()).Get(ctx, parent.GetName(), metav1.GetOptions{})
		}
		if err != nil {
			t.out.Errors = append(t.out.Errors, fmt.Sprintf("read the parent as %s: %v", gvr.GroupVersion(), err))
			return t.out
		}
	}
	t.pref = rules.ParentRefOf(parent.Object, r.Parent.GVR.GroupResource(), t.namespaced)
	if r.HasStatus {
		// A rule without a status block writes no conditions: those of its names are
		// another rule's.
		conds := clikit.ConditionsOf(parent.Object, r.SyncedCondition, r.ReadyCondition)
		t.out.Synced, t.out.Ready = clikit.FindCondition(conds, r.SyncedCondition), clikit.FindCondition(conds, r.ReadyCondition)
	}
	t.out.Selected = r.Selects(parent.GetNamespace(), t.namespaced, parent.GetLabels())
	if !t.out.Selected {
		t.out.NotSelected = "the rule's namespaces or selector leave this parent out"
	}
	released, err := t.listChildren(ctx)
	if err != nil {
		t.out.Errors = append(t.out.Errors, err.Error())
		return t.out
	}
	var res *rules.Result
	var evalErrs rules.ErrorList
	if t.out.Selected {
		objs := make([]map[string]any, 0, len(t.proven))
		for _, u := range t.proven {
			objs = append(objs, u.Object)
		}
		var err error
		res, err = r.EvaluateWithRefs(ctx, parent.Object, r.Observe(objs), liveRefs{t.c})
		var limit *rules.LimitError
		switch {
		case errors.As(err, &limit):
			t.out.Errors = append(t.out.Errors, err.Error())
		case errors.As(err, &evalErrs):
		case err != nil:
			t.out.Errors = append(t.out.Errors, err.Error())
		}
		if res != nil && res.Skip {
			t.out.Selected, t.out.NotSelected, res = false, "its parent.when is false for this parent", nil
		}
	}
	matched := t.desired(ctx, res, evalErrs)
	t.leftovers(matched, res)
	t.out.Children = append(t.out.Children, released...)
	if res != nil {
		t.out.EvaluatedReady = res.Ready
		t.refs(res, evalErrs)
	}
	for _, e := range evalErrs {
		if e.Child == "" && e.Ref == "" {
			t.out.Errors = append(t.out.Errors, e.Error())
		}
	}
	for i := range t.out.Children {
		t.withholdName(&t.out.Children[i])
	}
	return t.out
}

// withholdName replaces the name and namespace of a row with rules.Withheld where the
// rule computes them from Secret data (its messages name it withheld already).
func (t *ruleTracer) withholdName(c *traceChild) {
	if c.Name == "" || !t.rule.WithholdsName(c.ID) {
		return
	}
	c.Name = rules.Withheld
	if c.Namespace != "" {
		c.Namespace = rules.Withheld
	}
}

// listChildren lists the objects that carry this rule's and this parent's labels, in
// every kind of the rule's children: those whose proof verifies are the children
// (t.proven), the others are NotOurs. It returns the objects the rule released from
// this parent.
func (t *ruleTracer) listChildren(ctx context.Context) ([]traceChild, error) {
	seen := map[schema.GroupVersionKind]bool{}
	var released []traceChild
	for _, ch := range t.rule.Children {
		if seen[ch.GVK] {
			continue
		}
		seen[ch.GVK] = true
		m, err := t.c.mapping(ch.GVK)
		if err != nil {
			return nil, fmt.Errorf("child %q: %w", ch.ID, err)
		}
		ns := t.pref.Namespace
		if ch.CrossNamespace {
			ns = ""
		}
		ri := t.c.resource(m, ns)
		sel := fmt.Sprintf("%s=%s,%s=%s", contract.LabelRule, t.rule.Name, contract.LabelParentUID, t.pref.UID)
		list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return nil, fmt.Errorf("child %q: list %s: %w", ch.ID, m.Resource.GroupResource(), err)
		}
		for i := range list.Items {
			u := &list.Items[i]
			if t.id.ProvesObject(u) {
				t.proven = append(t.proven, u)
				continue
			}
			c := childRow(u, u.GetLabels()[contract.LabelChild], stateNotOurs)
			c.Message = fmt.Sprintf("carries this parent's labels, but no proof that installation %q made it: not a child", t.id.Name())
			t.out.Children = append(t.out.Children, c)
		}
		list, err = ri.List(ctx, metav1.ListOptions{LabelSelector: contract.LabelReleased + "=" + t.rule.Name})
		if err != nil {
			return nil, fmt.Errorf("child %q: list %s: %w", ch.ID, m.Resource.GroupResource(), err)
		}
		for i := range list.Items {
			u := &list.Items[i]
			if u.GetAnnotations()[contract.AnnotationReleasedFrom] != t.pref.Annotation() {
				continue
			}
			c := childRow(u, u.GetLabels()[contract.LabelChild], stateReleased)
			c.Message = "let go by the rule (lifecycle Keep): no longer kubecel's"
			released = append(released, c)
		}
	}
	return released, nil
}

// childRow describes a live object as a row of the trace.
func childRow(u *unstructured.Unstructured, id, state string) traceChild {
	o := objectOf(u)
	return traceChild{ID: id, APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, State: state, Created: o.Created, Conditions: o.Conditions}
}

// desired adds a row for every child the evaluation produced, waits for or failed on,
// and returns the observed children it accounted for.
func (t *ruleTracer) desired(ctx context.Context, res *rules.Result, errs rules.ErrorList) map[*unstructured.Unstructured]bool {
	matched := map[*unstructured.Unstructured]bool{}
	if res == nil {
		return matched
	}
	for _, d := range res.Children {
		t.out.Children = append(t.out.Children, t.desiredChild(ctx, d, matched))
	}
	for _, w := range res.Waiting {
		t.out.Children = append(t.out.Children, t.heldBack(w.ID, stateWaiting, "for "+strings.Join(w.On, ", "), "", matched)...)
	}
	for _, id := range res.Failed {
		own := false
		for _, e := range errs {
			if e.Child == id {
				own = true
				t.out.Children = append(t.out.Children, t.heldBack(id, stateFailed, joinReason(e.Field, e.Message), e.Expr, matched)...)
			}
		}
		if !own {
			t.out.Children = append(t.out.Children, t.heldBack(id, stateFailed, "a ref it reads could not be read (see the refs)", "", matched)...)
		}
	}
	for _, ch := range t.rule.Children {
		if t.accounted(ch.ID, res) {
			continue
		}
		c := traceChild{ID: ch.ID, APIVersion: ch.GVK.GroupVersion().String(), Kind: ch.GVK.Kind, State: stateExcluded, Lifecycle: lifecycleOf(ch)}
		c.Message = "its when is false, or it reads an excluded child"
		t.out.Children = append(t.out.Children, c)
	}
	return matched
}

// accounted reports whether the evaluation produced, held back or failed child id, or
// an object of it exists (a leftover, described by leftovers).
func (t *ruleTracer) accounted(id string, res *rules.Result) bool {
	return slices.ContainsFunc(res.Children, func(d rules.Desired) bool { return d.ID == id }) ||
		slices.ContainsFunc(res.Waiting, func(w rules.Waiting) bool { return w.ID == id }) ||
		slices.Contains(res.Failed, id) ||
		slices.ContainsFunc(t.proven, func(u *unstructured.Unstructured) bool { return u.GetLabels()[contract.LabelChild] == id })
}

// heldBack describes a child that was not evaluated, with its existing objects, which
// the controller keeps as they are.
func (t *ruleTracer) heldBack(id, state, msg, expr string, matched map[*unstructured.Unstructured]bool) []traceChild {
	ch := childByIDOf(t.rule, id)
	var out []traceChild
	for _, u := range t.proven {
		if u.GetLabels()[contract.LabelChild] == id && !matched[u] {
			matched[u] = true
			c := childRow(u, id, state)
			c.Message, c.Expression, c.Lifecycle = msg, expr, lifecycleOf(ch)
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		out = append(out, traceChild{ID: id, APIVersion: ch.GVK.GroupVersion().String(), Kind: ch.GVK.Kind, State: state, Message: msg, Expression: expr, Lifecycle: lifecycleOf(ch)})
	}
	return out
}

func childByIDOf(r *rules.Rule, id string) *rules.Child {
	for _, ch := range r.Children {
		if ch.ID == id {
			return ch
		}
	}
	return &rules.Child{ID: id}
}

// leftovers adds the observed children that the rule no longer produces.
func (t *ruleTracer) leftovers(matched map[*unstructured.Unstructured]bool, res *rules.Result) {
	for _, u := range t.proven {
		if matched[u] {
			continue
		}
		id := u.GetLabels()[contract.LabelChild]
		ch := childByIDOf(t.rule, id)
		c := childRow(u, id, stateNotProduced)
		c.Lifecycle = lifecycleOf(ch)
		switch {
		case res == nil && !t.out.Selected:
			c.Message = "the rule no longer selects the parent: the controller releases the parent and prunes this child"
		case res == nil:
			c.Message = "kept as it is: the evaluation failed"
		case ch.KeepOnRemove:
			c.Message = "the rule no longer produces it: released at the next reconcile (lifecycle onRemove: Keep)"
		default:
			c.Message = "the rule no longer produces it: pruned at the next reconcile"
		}
		t.out.Children = append(t.out.Children, c)
	}
	slices.SortStableFunc(t.out.Children, func(a, b traceChild) int {
		return strings.Compare(stateOrder(a.State), stateOrder(b.State))
	})
}

// stateOrder sorts the rows of the objects that are not children after the children.
func stateOrder(state string) string {
	switch state {
	case stateNotProduced:
		return "1"
	case stateNotOurs:
		return "2"
	}
	return "0"
}
