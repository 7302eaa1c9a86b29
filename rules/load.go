package rules

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/kubecel/kubecel/rules/internal/celbudget"
	"github.com/kubecel/kubecel/rules/internal/celenv"
	"github.com/kubecel/kubecel/rules/internal/exprcheck"
)

// Load parses, validates and compiles a rules file, which may hold several YAML
// documents. On failure the error is an ErrorList with every problem found, each naming
// the rule, child, field path and expression.
func Load(data []byte, opts Options) (*RuleSet, error) {
	return LoadDocuments([]Document{{Data: data}}, opts)
}

// LoadDocuments loads several documents as one rule set: their rules, in the order of
// the documents, must have distinct names. Empty YAML documents are skipped. On failure
// the error is an ErrorList ordered by document and line, each problem carrying the
// Source of its document and its line there.
func LoadDocuments(docs []Document, opts Options) (*RuleSet, error) {
	var errs ErrorList
	pieces := splitDocuments(oversized(docs, opts, &errs))
	var sources []*ruleSource
	for i, p := range pieces {
		mark := len(errs)
		for _, r := range parseFile(p.data, p.root, &errs) {
			r.piece = i
			sources = append(sources, r)
		}
		for _, e := range errs[mark:] {
			if e.path == "" {
				e.path = string(p.root) // a problem of the document as a whole
			}
		}
	}
	sources = tooManyRules(sources, pieces, opts, &errs)
	scope := newReuseScope(sources, opts)
	opts = withAPIs(sources, opts, &errs)
	checkRuleNames(sources, pieces, &errs)
	checkStatusOwners(sources, newScopes(opts), &errs)
	reusable := scope.reusable(opts.Previous)
	opts.Previous = nil // a set must not keep every set before it
	rs := &RuleSet{Hash: documentsHash(docs), sources: sources, pieces: pieces, opts: opts, reuse: scope}
	var flows ErrorList
	for i, c := range compileAll(sources, pieces, opts, reusable) {
		src := sources[i]
		errs = append(errs, c.errs...)
		if r := c.rule; r != nil {
			r.Source = pieces[src.piece].source
			r.Origin = pieces[src.piece].origin
			r.api = src.api.definition()
			rs.Rules = append(rs.Rules, r)
			flows = append(flows, r.warnings...)
		}
	}
	if len(errs) > 0 {
		locate(pieces, errs)
		return nil, errs
	}
	locate(pieces, flows)
	rs.Warnings = append(rs.Warnings, flows...)
	for i, src := range rs.sources {
		rs.sources[i] = src.revisable()
	}
	setConditionTypes(rs.Rules, newScopes(opts))
	for _, r := range rs.Rules {
		sealFingerprint(r)
	}
	for _, p := range pieces {
		for _, w := range booleanWarnings(p.data) {
			w.Source = p.source
			w.Line += p.offset
			rs.Warnings = append(rs.Warnings, w)
		}
	}
	return rs, nil
}

// sealFingerprint folds what the rest of the file and the Options decide about a rule
// into its fingerprint, so that a reload restarts a rule whose conditions or limit
// changed although its own source did not, and into its revision likewise. Before, both
// hash the rule's source alone.
func sealFingerprint(r *Rule) {
	seal := func(source string) string {
		sum := sha256.New()
		for _, part := range []string{source, r.Origin, r.ReadyCondition, r.SyncedCondition, strconv.Itoa(r.MaxChildren)} {
			sum.Write([]byte(part))
			sum.Write([]byte{0})
		}
		return hex.EncodeToString(sum.Sum(nil))
	}
	r.Fingerprint = seal(r.Fingerprint)
	r.Revision = seal(r.Revision)[:revisionLength]
}

// revisionLength is the number of hex characters of a Rule.Revision.
const revisionLength = 12

// statusField is one compiled status field.
type statusField struct {
	name  string
	value *node
	// reads lists the children the field reads; it is left out until they are observed.
	// refReads lists the refs it reads; it is left out while one is missing.
	reads, refReads []string
}

// compileRule validates and compiles one rule, or returns nil after reporting why it
// cannot.
func compileRule(src *ruleSource, opts Options, sh *share, errs *ErrorList) *Rule {
	before := len(*errs)
	gvr, selector := checkParent(src, errs)
	if len(*errs) == before {
		checkResourceName(src, gvr, opts, errs)
	}
	checkStatusSubresource(src, gvr, opts, errs)
	ids := checkChildIDs(src, errs)
	refIDs := checkRefIDs(src, errs)
	checkStatusFields(src, errs)

	var parentSchema *apiextensionsv1.JSONSchemaProps
	if !gvr.Empty() {
		parentSchema = opts.schemas().ResourceSchema(gvr)
	}
	refsType := refsDeclType(src.Refs, opts.schemas())
	var parentType *apiservercel.DeclType
	var e *celenv.Envs
	var err error
	if refsType == nil {
		parentType, e, err = sh.parent(parentSchema)
	} else {
		if parentSchema != nil {
			parentType = parentDeclType(parentSchema)
		}
		e, err = celenv.New(parentType, refsType)
	}
	if err != nil {
		fail(errs, where{Rule: src.Name, Path: src.At}, "cannot build the CEL environment: "+err.Error())
		return nil
	}
	c := &compiler{
		envs:     e,
		share:    sh,
		at:       where{Rule: src.Name, Path: src.At},
		errs:     errs,
		childIDs: ids,
		refIDs:   refIDs,
		cost:     celbudget.Costs{Limit: opts.costLimit(), Parent: parentType, Memory: memory},
	}
	r := &Rule{
		Name:         src.Name,
		Parent:       Parent{GVR: gvr, Namespaces: src.Parent.Namespaces, Selector: selector},
		HasStatus:    src.Status != nil,
		MaxChildren:  cmp.Or(src.MaxChildren, opts.maxChildren()),
		Fingerprint:  src.Fingerprint,
		Revision:     src.Revision,
		Document:     src.Document,
		timeout:      opts.evalTimeout(),
		maxEvalBytes: opts.maxEvalBytes(),
		parentType:   parentType,
		coerce:       hasDouble(parentType),
		refsType:     refsType,
	}
	rw := where{Rule: src.Name, Path: src.At}
	if src.Parent.When != "" {
		r.when = c.compile(c.env(e.ParentOnly), rw.Key("parent").Key("when"), src.Parent.When, src.Parent.When, 0, wantBool)
	}
	var children []*Child
	reads := map[string][]string{}
	scopes := newScopes(opts)
	parentNamespaced, parentKnown := scopes.resource(gvr.GroupResource())
	c.clusterParent = parentKnown && !parentNamespaced
	r.Refs = c.compileRefs(src, parentNamespaced, scopes)
	for _, cs := range src.Children {
		if ch := c.child(src, cs, opts); ch != nil {
			checkChildScope(src, cs, ch, gvr.GroupResource(), parentNamespaced, scopes, errs)
			children = append(children, ch)
			reads[ch.ID] = ch.reads
		}
	}
	if len(*errs) == before {
		checkServed(src, r, children, opts.Served, errs)
	}
	checkKnownKinds(src, r, children, opts, errs)
	if len(*errs) == before {
		r.Children = c.orderChildren(src.Name, src.At, children, reads)
	}
	if src.Status != nil {
		names := make([]string, 0, len(src.Status.Fields))
		for name := range src.Status.Fields {
			names = append(names, name)
		}
		slices.Sort(names)
		fw := rw.Key("status").Key("fields")
		// Status fields are checked against the parent's status schema, when known.
		vs := valueSchema{Kind: gvr.Resource, At: ".status"}
		if parentSchema != nil {
			if s, ok := parentSchema.Properties["status"]; ok {
				vs.Schema = &s
			}
		}
		for _, name := range names {
			// Only a CRD's status is checked for undeclared fields: a built-in kind's
			// status is its controller's, and checkStatusSubresource says what a CRD's
			// status must declare besides.
			// A rule set's own API says so itself (checkDeclaredStatus, with its advice).
			if msg := vs.UnknownField(name); msg != "" && opts.Schemas != nil && opts.Schemas.ResourceSchema(gvr) != nil && !definesAPI(opts, gvr) {
				fail(c.errs, fw.Key(name), msg)
			}
			mark := len(c.progs)
			v := c.compileValue(c.env(e.Base), src.Status.Fields[name], fw.Key(name), vs.Key(name))
			reads, refReads := c.readsSince(mark)
			r.status = append(r.status, statusField{name: name, value: v, reads: reads, refReads: refReads})
		}
		r.fastStatus = c.fastStatus(c.env(e.Base), r.status)
	}
	if src.Rollout != nil {
		c.compileRollout(r, src.Rollout, rw.Key("rollout"))
	}
	if len(*errs) > before {
		return nil
	}
	r.sens = markSensitive(r, c.progs)
	r.warnings = append(append(c.warnings, r.sens.nameWarnings(r, c.progs)...), r.sens.flowWarnings(r, c.progs)...)
	// Only a CRD's schema says which fields its objects may leave out: the embedded
	// schemas of the built-in kinds do not list what the API server always sets.
	if opts.Schemas != nil && !gvr.Empty() {
		r.warnings = append(r.warnings, optionalWarnings(r, opts.Schemas.ResourceSchema(gvr), c.progs)...)
	}
	r.sens.compact()
	c.dropChecked()
	return r
}

// readsSince returns the children and the refs read by the programs compiled since
// mark.
func (c *compiler) readsSince(mark int) (children, refs []string) {
	add := func(list []string, ids []string) []string {
		for _, id := range ids {
			if !slices.Contains(list, id) {
				list = append(list, id)
			}
		}
		return list
	}
	for _, p := range c.progs[mark:] {
		children, refs = add(children, p.reads), add(refs, p.refReads)
	}
	return children, refs
}

// child compiles one child entry.
func (c *compiler) child(r *ruleSource, cs *childSource, opts Options) *Child {
	if cs.ID == "" || !checkChildShape(r, cs, c.errs) {
		return nil
	}
	w := where{Rule: r.Name, Child: cs.ID, Path: cs.At}
	ch := &Child{ID: cs.ID, ForEach: cs.ForEach != "", CrossNamespace: cs.CrossNamespace, Adopt: cs.Adopt,
		KeepOnRemove: cs.Lifecycle.KeepOnRemove, KeepOnParentDelete: cs.Lifecycle.KeepOnParentDelete}
	mark := len(c.progs)
	if cs.When != "" {
		ch.when = c.compile(c.env(c.envs.Base), w.Key("when"), cs.When, cs.When, 0, wantBool)
	}
	// The readyWhen environment is built only for a child that has one.
	env, readyEnv := c.env(c.envs.Base), func() *cel.Env { return c.env(c.envs.Ready) }
	if ch.ForEach {
		ch.forEach = c.compile(env, w.Key("forEach"), cs.ForEach, cs.ForEach, 0, wantList)
		each := cel.DynType
		if ch.forEach != nil && ch.forEach.out.Kind() == types.ListKind {
			each = ch.forEach.out.Parameters()[0]
		}
		if env == nil {
			return nil
		}
		var err error
		if env, err = celenv.WithEach(env, each); err != nil {
			c.fail(w.Key("forEach"), cs.ForEach, 0, "cannot declare each and index: "+err.Error())
			return nil
		}
		if cs.ReadyWhen != "" {
			ready := readyEnv()
			if ready == nil {
				return nil
			}
			if ready, err = celenv.WithEach(ready, each); err != nil {
				c.fail(w.Key("forEach"), cs.ForEach, 0, "cannot declare each and index: "+err.Error())
				return nil
			}
			readyEnv = func() *cel.Env { return ready }
		}
	}
	if cs.Template != nil {
		tw := w.Key("template")
		gvk, ok := checkTemplateHead(cs.Template, tw, c.errs)
		if !ok {
			return nil
		}
		ch.GVK, ch.apiVersion = gvk, gvk.GroupVersion().String()
		vs := objectSchema(gvk.Kind, opts.schemas().KindSchema(gvk))
		ch.typed = vs.Schema != nil
		ch.template = c.compileValue(env, cs.Template, tw, vs)
	} else {
		ch.expr = c.compile(env, w.Key("expr"), cs.Expr, cs.Expr, 0, wantMap)
		if ch.expr != nil {
			gvk, msg := exprGVK(ch.expr.checked)
			if msg != "" {
				c.fail(w.Key("expr"), cs.Expr, 0, msg)
			}
			ch.GVK, ch.apiVersion = gvk, gvk.GroupVersion().String()
			if msg == "" {
				ch.typed = c.checkExprFields(ch.expr, 0, objectSchema(gvk.Kind, opts.schemas().KindSchema(gvk)))
			}
		}
	}
	ch.fast = c.fastChild(env, ch)
	if cs.ReadyWhen != "" {
		ch.readyWhen = c.compile(readyEnv(), w.Key("readyWhen"), cs.ReadyWhen, cs.ReadyWhen, 0, wantBool)
	}
	ch.reads, ch.refReads = c.readsSince(mark)
	return ch
}

// exprGVK finds the constant apiVersion and kind entries of an expr child's top-level
// map literal.
func exprGVK(checked *cel.Ast) (gvk schema.GroupVersionKind, msg string) {
	const need = `expr must be a map literal with literal "apiVersion" and "kind" entries, e.g. {"apiVersion": "v1", "kind": "ConfigMap", ...}: the controller watches and prunes children by kind`
	root := checked.NativeRep().Expr()
	if root.Kind() != celast.MapKind {
		return gvk, need
	}
	var apiVersion, kind string
	for _, entry := range root.AsMap().Entries() {
		me := entry.AsMapEntry()
		key, isKey := exprcheck.LiteralString(me.Key())
		if !isKey {
			continue
		}
		value, isValue := exprcheck.LiteralString(me.Value())
		switch key {
		case "apiVersion":
			if !isValue {
				return gvk, need
			}
			apiVersion = value
		case "kind":
			if !isValue {
				return gvk, need
			}
			kind = value
		}
	}
	if apiVersion == "" || kind == "" {
		return gvk, need
	}
	gv, m := parseGroupVersion(apiVersion)
	if m != "" {
		return gvk, m
	}
	if !kindPattern.MatchString(kind) {
		return gvk, fmt.Sprintf("invalid kind %q", kind)
	}
	return gv.WithKind(kind), ""
}
