package rules

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules/internal/celenv"
)

// Which values come from Secrets. CEL's error texts quote their inputs (`no such key:
// <key>`, the string a url() or quantity() could not parse), so an expression that
// reads Secret data must never have its error text shown: in status, Events, logs,
// plan, render or check. Load marks, per rule:
//
//   - sensitive refs: of kind core v1 Secret, or marked `sensitive: true`;
//   - sensitive children: of kind Secret, or whose expressions read sensitive data (a
//     ConfigMap filled from a Secret holds Secret data too);
//   - sensitive programs: those that read a sensitive ref or child, every expression of
//     a child whose expressions read one (`each` of a forEach over Secret data), and
//     every expression of a rule whose parent is a Secret.
//
// An evaluation error of a sensitive program keeps its rule, child, ref, field and
// expression, and says that its text is withheld.

// secretKind is the kind whose data is secret.
var secretKind = schema.GroupKind{Kind: "Secret"}

// withheld is the message of an error whose text could hold Secret data.
func withheld(reads string) string {
	return "evaluation failed; its message is withheld because the expression reads Secret data (" + reads + ")"
}

// sensitivity records what a rule reads of Secrets.
type sensitivity struct {
	parent bool // the parent is a Secret
	// refs and children are the sensitive ref and child ids: those that hold Secret data
	// (a Secret, a ref marked sensitive, a child filled from Secret data) or whose names
	// are computed from it.
	refs, children map[string]bool
	derived        map[string]bool // children whose expressions read sensitive data
	// dataRefs and dataChildren are those that hold Secret data; namedRefs and
	// namedChildren those whose names are computed from it (secretnames.go).
	dataRefs, dataChildren   map[string]bool
	namedRefs, namedChildren map[string]bool
	// eachData are the forEach children whose each holds Secret data.
	eachData map[string]bool
}

// compact drops the false entries of s's sets, and the sets left empty, once the rule's
// load has marked everything: every reader asks only whether an id is in a set, and
// most rules read no Secret at all.
func (s *sensitivity) compact() {
	for _, m := range []*map[string]bool{&s.refs, &s.children, &s.derived, &s.dataRefs, &s.dataChildren, &s.namedRefs, &s.namedChildren, &s.eachData} {
		maps.DeleteFunc(*m, func(_ string, v bool) bool { return !v })
		if len(*m) == 0 {
			*m = nil
		}
	}
}

// markSensitive sets Ref.Sensitive, Ref.SecretName, Child.Sensitive, Child.SecretName
// and the programs' sensitive flags of a compiled rule (refs and children in dependency
// order).
func markSensitive(r *Rule, progs []*program) *sensitivity {
	s := &sensitivity{
		parent: r.Parent.GVR.GroupResource() == schema.GroupResource{Resource: "secrets"},
		refs:   map[string]bool{}, children: map[string]bool{}, derived: map[string]bool{},
		dataRefs: map[string]bool{}, dataChildren: map[string]bool{},
		namedRefs: map[string]bool{}, namedChildren: map[string]bool{}, eachData: map[string]bool{},
	}
	for _, ref := range r.Refs {
		ref.Sensitive = ref.Sensitive || ref.GVK.GroupKind() == secretKind
		s.dataRefs[ref.ID] = ref.Sensitive
		ref.SecretName = s.namesRef(ref, progs)
		s.namedRefs[ref.ID] = ref.SecretName
		s.refs[ref.ID] = ref.Sensitive || ref.SecretName
	}
	for _, ch := range r.Children {
		s.derived[ch.ID] = s.parent || s.readsAny(ch.refReads, ch.reads)
		s.dataChildren[ch.ID] = ch.GVK.GroupKind() == secretKind || s.derived[ch.ID]
		ch.SecretName = s.namesChild(ch, progs)
		s.namedChildren[ch.ID] = ch.SecretName
		s.derived[ch.ID] = s.derived[ch.ID] || ch.SecretName
		ch.Sensitive = s.dataChildren[ch.ID] || ch.SecretName
		s.children[ch.ID] = ch.Sensitive
	}
	for _, p := range progs {
		p.sensitive = s.parent || s.readsAny(p.refReads, p.reads) || p.w.Child != "" && s.derived[p.w.Child]
	}
	return s
}

// readsAny reports whether expressions that read these refs and children read
// sensitive data.
func (s *sensitivity) readsAny(refs, children []string) bool {
	return slices.ContainsFunc(refs, func(id string) bool { return s.refs[id] }) ||
		slices.ContainsFunc(children, func(id string) bool { return s.children[id] })
}

// what names the sensitive data a program reads, for its withheld message.
func (s *sensitivity) what(p *program) string {
	var names []string
	switch {
	case s.parent && string(p.w.Field) == fieldHealthy:
		names = append(names, celenv.Parents)
	case s.parent:
		names = append(names, celenv.Parent)
	}
	for _, id := range p.refReads {
		if s.refs[id] {
			names = append(names, "refs."+id)
		}
	}
	for _, id := range p.reads {
		if s.children[id] {
			names = append(names, "children."+id)
		}
	}
	if len(names) == 0 && p.w.Child != "" {
		names = append(names, fmt.Sprintf("child %q reads it", p.w.Child))
	}
	return strings.Join(names, ", ")
}

// flowWarnings are the load warnings of a rule whose Secret data flows where people who
// cannot read Secrets may see it: into a child that is not a Secret, or into the
// parent's status.
func (s *sensitivity) flowWarnings(r *Rule, progs []*program) []*Error {
	var out []*Error
	seen := map[string]bool{}
	for _, p := range progs {
		// Only what reads Secret data itself: the other fields of a child that reads
		// some are sensitive for their errors, but carry no Secret data. A name
		// computed from Secret data has its own warning (nameWarnings).
		if !p.sensitive || s.parent || !s.readsSecretValues(p, s.eachData[p.w.Child]) ||
			p.w.Child != "" && s.namedChildren[p.w.Child] && namesObject(string(p.w.Field)) && string(p.w.Field) != "expr" {
			continue
		}
		var target string
		switch {
		case p.w.Ref != "":
			continue // a ref's name or selector is not shown
		case p.w.Child != "" && !s.isSecretChild(r, p.w.Child):
			target = fmt.Sprintf("child %q, which is not a Secret", p.w.Child)
		case p.w.Child == "" && strings.HasPrefix(string(p.w.Field), "status."):
			target = "the parent's status"
		default:
			continue
		}
		key := p.w.Child + "\x00" + string(p.w.Field)
		if seen[key] || strings.HasSuffix(string(p.w.Field), "readyWhen") || string(p.w.Field) == "when" {
			continue
		}
		seen[key] = true
		out = append(out, &Error{Rule: r.Name, Child: p.w.Child, Field: string(p.w.Field), Expr: p.source, path: string(p.w.Path),
			Message: fmt.Sprintf("puts what it reads of Secret data (%s) into %s: whoever can read that can read it", s.what(p), target)})
	}
	return out
}

// isSecretChild reports whether the rule's child id is of kind Secret.
func (s *sensitivity) isSecretChild(r *Rule, id string) bool {
	for _, ch := range r.Children {
		if ch.ID == id {
			return ch.GVK.GroupKind() == secretKind
		}
	}
	return false
}

// quotesNothing reports whether an evaluation error is one whose text kubecel wrote
// without any value: the cost limit, the memory limit, the deadline.
func quotesNothing(err error) bool {
	return errors.Is(err, ErrCostLimit) || errors.Is(err, ErrMemoryLimit) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// withheldErr keeps what callers test an evaluation error for (a deadline, a cost
// limit) without its text.
func withheldErr(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return context.Canceled
	}
	return errors.New("withheld")
}

// StatusReadsSecrets reports whether a status field of the rule reads Secret data: an
// error about writing the status must not quote it.
func (r *Rule) StatusReadsSecrets() bool {
	if r.sens == nil {
		return false
	}
	for _, f := range r.status {
		if r.sens.parent || r.sens.readsAny(f.refReads, f.reads) {
			return true
		}
	}
	return false
}
