package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"time"
)

// A reload usually edits a few rules of many. Compiling a rule reads its own source, its
// place in the file, the Options (schemas, what is served, limits) and the APIs the set's
// rules define, nothing else; when none of those changed since Options.Previous was
// loaded, its compiled rule is taken over (reuseScope, compileAll) and only what depends
// on the rest of the set (the condition types, the sealed fingerprint and revision, the
// Source and Origin fields) is set again.

// reuseScope is what every rule of a load depends on besides its own source: the
// Options as given (before withAPIs adds the set's own APIs) and the APIs the set
// defines.
type reuseScope struct {
	schemas, served any
	costLimit       uint64
	evalTimeout     time.Duration
	maxEvalBytes    int64
	maxChildren     int
	// apis hashes the documents of the rules that define an API, in order.
	apis string
}

// newReuseScope is the scope of a load of sources with opts.
func newReuseScope(sources []*ruleSource, opts Options) reuseScope {
	sum := sha256.New()
	for _, src := range sources {
		if src.api != nil {
			sum.Write([]byte(src.fingerprint))
			sum.Write([]byte{0})
		}
	}
	return reuseScope{
		schemas: opts.Schemas, served: opts.Served,
		costLimit: opts.costLimit(), evalTimeout: opts.evalTimeout(),
		maxEvalBytes: opts.maxEvalBytes(), maxChildren: opts.maxChildren(),
		apis: hex.EncodeToString(sum.Sum(nil)),
	}
}

// same reports whether a load in scope s may take over rules compiled in scope o.
// Schemas and Served must be the very same values: a source of another type, or one
// that cannot be compared, never is.
func (s reuseScope) same(o reuseScope) bool {
	return identical(s.schemas, o.schemas) && identical(s.served, o.served) &&
		s.costLimit == o.costLimit && s.evalTimeout == o.evalTimeout &&
		s.maxEvalBytes == o.maxEvalBytes && s.maxChildren == o.maxChildren && s.apis == o.apis
}

// identical reports whether a and b are the same value of a comparable type (for the
// pointers sources usually are, the same object); two nils are.
func identical(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t.Comparable() && a == b
}

// reusable indexes the rules of prev that a load in scope s may take over, by reuseKey;
// nil when prev is nil or was loaded in another scope. Rules with load warnings are left
// out: their warnings carry lines of the file as it was.
func (s reuseScope) reusable(prev *RuleSet) map[string]*Rule {
	if prev == nil || !s.same(prev.reuse) {
		return nil
	}
	out := make(map[string]*Rule, len(prev.Rules))
	for _, r := range prev.Rules {
		if r.reuseKey != "" && len(r.warnings) == 0 {
			out[r.reuseKey] = r
		}
	}
	return out
}

// reuseKey identifies what a rule's compilation reads of its own: its document (the
// canonical JSON fingerprint hashes), its place in the file (which the paths of its
// problems start with) and the Source and Origin of its YAML document.
func reuseKey(src *ruleSource, p piece) string {
	sum := sha256.New()
	for _, part := range []string{src.fingerprint, string(src.at), p.source, p.origin} {
		sum.Write([]byte(part))
		sum.Write([]byte{0})
	}
	return hex.EncodeToString(sum.Sum(nil))
}

// takeOver is a copy of prev for a load that reuses it: the fields the rest of the set
// decides are left for LoadDocuments to set again.
func takeOver(prev *Rule, src *ruleSource) *Rule {
	r := *prev
	r.Fingerprint, r.Revision = src.fingerprint, src.revision
	r.ReadyCondition, r.SyncedCondition = "", ""
	return &r
}
