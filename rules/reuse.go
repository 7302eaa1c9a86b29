package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A reload usually edits a few rules of many. Compiling a rule reads its own source, its
// place in the file, the Options (limits, what is served, the schemas of the kinds it
// names) and the APIs the set's rules define, nothing else; when none of those changed
// since Options.Previous was loaded, its compiled rule is taken over (reuseScope,
// compileAll) and only what depends on the rest of the set (the condition types, the
// sealed fingerprint and revision, the Source and Origin fields) is set again. With
// another SchemaSource than before (a CRD changed), a rule is taken over when what the
// new source says of each kind it names is the same as before (kindDeps): the same schema
// objects, scope and status subresource.

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
		if src.api.definition() != nil {
			sum.Write([]byte(src.Fingerprint))
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

// same reports whether a load in scope s may take over rules compiled in scope o, and
// whether it may without comparing their kindDeps (the same Schemas). Served must be the
// very same value: a source of another type, or one that cannot be compared, never is.
func (s reuseScope) same(o reuseScope) (ok, sameSchemas bool) {
	ok = identical(s.served, o.served) &&
		s.costLimit == o.costLimit && s.evalTimeout == o.evalTimeout &&
		s.maxEvalBytes == o.maxEvalBytes && s.maxChildren == o.maxChildren && s.apis == o.apis
	return ok, ok && identical(s.schemas, o.schemas)
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

// reusable is the rules of prev that a load in scope s may take over, by reuseKey.
type reusable struct {
	rules map[string]*Rule
	// checkKinds is set when the schema source changed: a rule is then taken over only
	// if its kindDeps in the new one are what they were.
	checkKinds bool
}

// reusable indexes the rules of prev that a load in scope s may take over; none when
// prev is nil or was loaded in another scope. Rules with load warnings are left out:
// their warnings carry lines of the file as it was.
func (s reuseScope) reusable(prev *RuleSet) reusable {
	if prev == nil {
		return reusable{}
	}
	ok, sameSchemas := s.same(prev.reuse)
	if !ok {
		return reusable{}
	}
	out := reusable{rules: make(map[string]*Rule, len(prev.Rules)), checkKinds: !sameSchemas}
	for _, r := range prev.Rules {
		if r.reuseKey != "" && len(r.warnings) == 0 {
			out.rules[r.reuseKey] = r
		}
	}
	return out
}

// take returns the rule of src to take over, nil when it must be compiled.
func (u reusable) take(src *ruleSource, p piece, opts Options) *Rule {
	prev := u.rules[reuseKey(src, p)]
	if prev == nil {
		return nil
	}
	if u.checkKinds && !slices.Equal(prev.kinds, kindDeps(prev, opts)) {
		return nil
	}
	return takeOver(prev, src)
}

// reuseKey identifies what a rule's compilation reads of its own: its document (the
// canonical JSON fingerprint hashes), its place in the file (which the paths of its
// problems start with) and the Source and Origin of its YAML document.
func reuseKey(src *ruleSource, p piece) string {
	sum := sha256.New()
	for _, part := range []string{src.Fingerprint, string(src.At), p.source, p.origin} {
		sum.Write([]byte(part))
		sum.Write([]byte{0})
	}
	return hex.EncodeToString(sum.Sum(nil))
}

// takeOver is a copy of prev for a load that reuses it: the fields the rest of the set
// decides are left for LoadDocuments to set again.
func takeOver(prev *Rule, src *ruleSource) *Rule {
	r := *prev
	r.Fingerprint, r.Revision = src.Fingerprint, src.Revision
	r.ReadyCondition, r.SyncedCondition = "", ""
	return &r
}

// kindDep is what the schema sources say of one kind a rule names: its schema (the
// object, so that a source built again from the same CRD objects gives the same), its
// scope and whether it has a status subresource.
type kindDep struct {
	schema              *apiextensionsv1.JSONSchemaProps
	namespaced, known   bool
	status, statusKnown bool
}

// kindDeps is what opts's schema sources say of the kinds r names: its parent's
// resource, then its children's and refs' kinds, in order.
func kindDeps(r *Rule, opts Options) []kindDep {
	schemas, scopes := opts.schemas(), newScopes(opts)
	status, _ := opts.Schemas.(statusSubresources)
	out := make([]kindDep, 0, 1+len(r.Children)+len(r.Refs))
	gvr := r.Parent.GVR
	d := kindDep{schema: schemas.ResourceSchema(gvr)}
	d.namespaced, d.known = scopes.resource(gvr.GroupResource())
	if status != nil {
		d.status, d.statusKnown = status.hasStatusSubresource(gvr)
	}
	out = append(out, d)
	kind := func(gvk schema.GroupVersionKind) kindDep {
		d := kindDep{schema: schemas.KindSchema(gvk)}
		d.namespaced, d.known = scopes.kind(gvk.GroupKind())
		return d
	}
	for _, ch := range r.Children {
		out = append(out, kind(ch.GVK))
	}
	for _, ref := range r.Refs {
		out = append(out, kind(ref.GVK))
	}
	return out
}
