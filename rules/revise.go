package rules

import (
	"fmt"
	"slices"
	"strconv"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kubecel/kubecel/rules/internal/parse"
)

// This file compiles a rule's earlier revision, kept as its Rule.Document, within the
// rule set it was loaded with: what a rollout runs on the parents it has not reached
// yet, and what a rollback returns to.

// Revise compiles the named rule from document (a Rule.Document stored earlier) in place
// of its current source, within this rule set and with the Options it was loaded with:
// the rule as it was at that revision. The result is what loading the rule set's
// documents with that source in place of the rule's gives: the same Revision, Document
// and Fingerprint. So its Revision equals the stored revision's when the rest of the
// rule set decides the same about it (its conditions, its child limit) and the rule
// comes from the same origin.
//
// A name that is not in the set (a rule since removed) is compiled as if added at the
// end of the set, from a document without Source or Origin, as Load would.
//
// The rule set is not changed. On failure the error is an ErrorList, each problem
// naming the rule and what failed (for instance a field of the parent's schema that the
// stored expressions read and that is gone); its problems have no Line, since they are in
// the stored document, not in a file.
func (rs *RuleSet) Revise(name string, document []byte) (*Rule, error) {
	r, errs := rs.revise(name, document)
	if len(errs) == 0 {
		return r, nil
	}
	for _, e := range errs {
		if e.Rule == "" {
			e.Rule = name
		}
	}
	return nil, errs
}

// revise compiles the revision; it returns what failed, else the rule.
func (rs *RuleSet) revise(name string, document []byte) (*Rule, ErrorList) {
	var errs ErrorList
	var doc any
	if err := utiljson.Unmarshal(document, &doc); err != nil {
		return nil, ErrorList{{Message: "the stored revision is not JSON: " + err.Error()}}
	}
	at := slices.IndexFunc(rs.sources, func(s *ruleSource) bool { return s.Name == name })
	// The revision is a piece of its own, so that its paths never meet the file's, with
	// the source and origin of the document the rule is in now.
	pieces := slices.Clone(rs.pieces)
	p := piece{root: path("#" + strconv.Itoa(len(pieces)))}
	if at >= 0 {
		now := rs.pieces[rs.sources[at].piece]
		p.source, p.origin = now.source, now.origin
	}
	pieces = append(pieces, p)
	decoded, problems := parse.RuleAt(doc, p.root.Key("rules").Index(0))
	errs = append(errs, problemErrors(problems)...)
	if decoded == nil {
		return nil, errs
	}
	src := newRuleSource(decoded)
	src.piece = len(pieces) - 1
	if src.Name != "" && src.Name != name {
		fail(&errs, where{Rule: name, Field: "name", Path: src.At.Key("name")},
			fmt.Sprintf("the stored revision is of rule %q", src.Name))
		return nil, errs
	}
	sources := slices.Clone(rs.sources)
	if at >= 0 {
		sources[at] = src
	} else {
		sources = append(sources, src)
	}
	checkRuleNames([]*ruleSource{src}, pieces, &errs)
	scopes := newScopes(rs.opts)
	checkStatusOwners(sources, scopes, &errs)
	r := compileRule(src, rs.opts, nil, &errs)
	if r == nil && len(errs) == 0 {
		errs = append(errs, &Error{Message: "the stored revision does not compile"})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	r.Source, r.Origin = p.source, p.origin
	rules := slices.Clone(rs.Rules)
	if i := slices.IndexFunc(rules, func(o *Rule) bool { return o.Name == name }); i >= 0 {
		rules[i] = r
	} else {
		rules = append(rules, r)
	}
	r.ReadyCondition, r.SyncedCondition = conditionTypes(r, rules, scopes)
	sealFingerprint(r)
	return r, nil
}
