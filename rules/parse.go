package rules

import (
	"github.com/kubecel/kubecel/rules/apischema"
	"github.com/kubecel/kubecel/rules/internal/parse"
)

// This file turns the bytes of a rules file into source structs, strictly: unknown
// fields and wrongly typed values are errors that name their path. Meaning is checked
// in validate.go.

// parseFile decodes one YAML document of a rules file (parse.File), adding its
// problems to errs.
func parseFile(data []byte, root path, errs *ErrorList) []*ruleSource {
	rules, problems := parse.File(data, root)
	*errs = append(*errs, problemErrors(problems)...)
	out := make([]*ruleSource, len(rules))
	for i, r := range rules {
		out[i] = newRuleSource(r)
	}
	return out
}

// ruleSource is a rule as written, and the piece of the rule set it is in.
type ruleSource struct {
	*parse.Rule
	// piece is the index of the rule's YAML document among those of the rule set.
	piece int
	// api is the definition of the rule's api block (the loader reads it by this name).
	api *apiSource
}

func newRuleSource(r *parse.Rule) *ruleSource {
	return &ruleSource{Rule: r, api: &apiSource{def: r.API.Definition()}}
}

// revisable is what RuleSet.Revise reads of a loaded rule's source besides the stored
// document it compiles: the rule's name, its parent, its status fields (their names, for
// checkStatusOwners; their values are mostly the texts its programs hold anyway), where
// it is and in which piece. The rest (the children's templates and expressions, the
// refs) is in the compiled rule, and a rule set does not keep it twice.
func (s *ruleSource) revisable() *ruleSource {
	r := &parse.Rule{Name: s.Name, Parent: s.Parent, Status: s.Status, At: s.At}
	return &ruleSource{Rule: r, piece: s.piece, api: s.api}
}

// apiSource is a rule's api block: its definition, nil when the rule has none or the
// block has problems.
type apiSource struct {
	def *apischema.Definition
}

// definition is the block's definition, or nil.
func (a *apiSource) definition() *apischema.Definition {
	return a.def
}

// The other source structs are package parse's.
type (
	childSource   = parse.Child
	refSource     = parse.Ref
	rolloutSource = parse.Rollout
)

// problemErrors turns the problems package parse found into Errors.
func problemErrors(problems []parse.Problem) []*Error {
	if len(problems) == 0 {
		return nil
	}
	out := make([]*Error, len(problems))
	for i, p := range problems {
		out[i] = errorAt(p.At, p.Message)
		out[i].Line = p.Line
	}
	return out
}

// errorAt is the Error of a problem at w that has no expression.
func errorAt(w where, msg string) *Error {
	return &Error{Rule: w.Rule, Child: w.Child, Ref: w.Ref, Field: string(w.Field), Message: msg, path: string(w.Path)}
}
