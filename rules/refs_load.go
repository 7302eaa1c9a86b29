package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/kubecel/kubecel/rules/internal/celenv"
	"github.com/kubecel/kubecel/rules/internal/exprcheck"
	"github.com/kubecel/kubecel/rules/internal/parse"
)

// This file reads, checks and compiles a rule's refs: parse them strictly, compile their
// name, namespace and selector as templates over `parent` and the refs before them, find
// which refs every expression reads, and order the refs by what they read.

// refProgram holds a ref's compiled name, namespace and selector.
type refProgram struct {
	name, namespace, selector *node
	// clusterScoped and namespaced are true when the kind is known to be so.
	clusterScoped, namespaced bool
	// reads lists the refs that name, namespace and selector read.
	reads []string
}

// compileRefs checks and compiles a rule's refs and returns them in dependency order.
// The ids are set on c first, so that every later expression can be checked for the
// refs it reads.
func (c *compiler) compileRefs(src *ruleSource, parentNamespaced bool, s scopes) []*Ref {
	var refs []*Ref
	reads := map[string][]string{}
	for _, rs := range src.Refs {
		if ref := c.ref(src, rs, parentNamespaced, s); ref != nil {
			refs = append(refs, ref)
			reads[ref.ID] = ref.compiled.reads
		}
	}
	ids := make([]string, len(refs))
	for i, ref := range refs {
		ids[i] = ref.ID
	}
	order, cycles := orderIDs(ids, reads)
	for _, cycle := range cycles {
		*c.errs = append(*c.errs, &Error{Rule: src.Name, Ref: cycle[0],
			Message: "dependency cycle: " + strings.Join(cycle, " -> ") + "; a ref cannot read, directly or not, a ref that reads it",
			path:    string(src.At.Key("refs"))})
	}
	if len(cycles) > 0 {
		return nil
	}
	byID := make(map[string]*Ref, len(refs))
	for _, ref := range refs {
		byID[ref.ID] = ref
	}
	out := make([]*Ref, len(order))
	for i, id := range order {
		out[i] = byID[id]
		out[i].DependsOn = reads[id]
	}
	return out
}

// checkRefIDs reports missing, malformed and duplicate ref ids and returns the valid ones.
func checkRefIDs(r *ruleSource, errs *ErrorList) []string {
	var ids []string
	for _, rs := range r.Refs {
		w := where{Rule: r.Name, Ref: rs.ID, Path: rs.At}
		switch {
		case rs.ID == "":
			continue // reported as required
		case !childIDPattern.MatchString(rs.ID):
			fail(errs, w.Key("id"), "invalid ref id: use letters, digits and _ and start with a letter (it is read in CEL as refs.<id>)")
		case celReserved[rs.ID]:
			fail(errs, w.Key("id"), "invalid ref id: it is a CEL reserved word")
		case slices.Contains(ids, rs.ID):
			fail(errs, w.Key("id"), "duplicate ref id; ids must be unique in a rule")
		default:
			ids = append(ids, rs.ID)
		}
	}
	return ids
}

// ref compiles one ref.
func (c *compiler) ref(r *ruleSource, rs *refSource, parentNamespaced bool, s scopes) *Ref {
	if rs.ID == "" || (rs.Name == "" && rs.Selector == nil) {
		return nil
	}
	w := where{Rule: r.Name, Ref: rs.ID, Path: rs.At}
	gv, msg := parseGroupVersion(rs.APIVersion)
	if msg != "" {
		fail(c.errs, w.Key("apiVersion"), msg)
		return nil
	}
	if !kindPattern.MatchString(rs.Kind) {
		fail(c.errs, w.Key("kind"), fmt.Sprintf("invalid kind %q", rs.Kind))
		return nil
	}
	ref := &Ref{ID: rs.ID, GVK: gv.WithKind(rs.Kind), Selector: rs.Selector != nil, Optional: rs.Optional,
		CrossNamespace: rs.CrossNamespace, Sensitive: rs.Sensitive, compiled: &refProgram{}}
	if !strings.Contains(rs.Namespace, "${") {
		ref.Namespace = rs.Namespace
	}
	namespaced, known := s.kind(ref.GVK.GroupKind())
	ref.compiled.clusterScoped, ref.compiled.namespaced = known && !namespaced, known && namespaced
	if !c.refScope(r, rs, ref, parentNamespaced, w) {
		return nil
	}
	c.computedNamespace(rs, ref, w)
	mark := len(c.progs)
	env := c.env(c.envs.Refs)
	if rs.Name != "" {
		ref.compiled.name = c.compileValue(env, rs.Name, w.Key("name"), valueSchema{})
	}
	if rs.Namespace != "" {
		ref.compiled.namespace = c.compileValue(env, rs.Namespace, w.Key("namespace"), valueSchema{})
	}
	if rs.Selector != nil {
		ref.compiled.selector = c.compileValue(env, rs.Selector, w.Key("selector"), valueSchema{})
	}
	_, ref.compiled.reads = c.readsSince(mark)
	return ref
}

// refScope checks at load what can be known of where a ref reads: a namespaced parent
// reads its own namespace (and its own Namespace by name) unless the ref says
// crossNamespace; so does every ref that can reach any namespace: a selector over
// Namespaces, and, under a cluster-scoped parent, which has no namespace of its own, a
// computed namespace or a selector across every namespace.
func (c *compiler) refScope(r *ruleSource, rs *refSource, ref *Ref, parentNamespaced bool, w where) bool {
	if rs.CrossNamespace {
		return true
	}
	isNamespace := ref.GVK.GroupKind() == schema.GroupKind{Kind: "Namespace"}
	computed := strings.Contains(rs.Namespace, "${")
	ownNamespaces := r.Parent.APIVersion == "v1" && r.Parent.Resource == "namespaces"
	switch {
	case isNamespace && rs.Selector != nil:
		fail(c.errs, w.Key("selector"), "a selector over Namespaces reads every namespace's labels and annotations: it needs crossNamespace: true on the ref")
		return false
	case c.clusterParent && ref.compiled.namespaced && computed && !ownNamespaces:
		// A Namespace parent's ref into its own namespace is checked when evaluated.
		fail(c.errs, w.Key("namespace"), "the parent is cluster-scoped: a namespace computed with ${} can name any namespace, which needs crossNamespace: true on the ref")
		return false
	case c.clusterParent && ref.compiled.namespaced && rs.Selector != nil && rs.Namespace == "":
		fail(c.errs, w.Key("selector"), "the parent is cluster-scoped: a selector without a namespace reads every namespace, which needs crossNamespace: true on the ref")
		return false
	case !parentNamespaced:
		return true
	case ref.compiled.clusterScoped && !isNamespace:
		fail(c.errs, w.Key("kind"), fmt.Sprintf("%s is cluster-scoped, and the parent is namespaced: reading it needs crossNamespace: true on the ref", rs.Kind))
		return false
	case ref.Namespace != "" && r.Parent.Namespaces != nil && !(len(r.Parent.Namespaces) == 1 && r.Parent.Namespaces[0] == ref.Namespace):
		fail(c.errs, w.Key("namespace"), fmt.Sprintf("namespace %q is not the parent's: reading another namespace needs crossNamespace: true on the ref", ref.Namespace))
		return false
	}
	return true
}

// ownNamespace is the template of a ref's namespace (or a Namespace's name) that names
// the parent's own namespace, which every ref may read.
const ownNamespace = "${parent.metadata.namespace}"

// computedNamespace warns about a ref whose namespace (a Namespace's name, for a ref to
// Namespaces) is computed with ${}, under a parent that is or may be namespaced, without
// crossNamespace: true. Only the parent's own namespace passes then, and any other value
// fails the parent's reconcile when the ref is evaluated, which loading cannot see: a
// namespace taken from the parent's spec works in tests where it equals the parent's
// and fails in use.
func (c *compiler) computedNamespace(rs *refSource, ref *Ref, w where) {
	if rs.CrossNamespace || c.clusterParent {
		return
	}
	field, text := "namespace", rs.Namespace
	if ref.GVK.GroupKind() == (schema.GroupKind{Kind: "Namespace"}) {
		field, text = "name", rs.Name
	}
	if !strings.Contains(text, "${") || strings.TrimSpace(text) == ownNamespace {
		return
	}
	at := w.Key(field)
	c.warnings = append(c.warnings, &Error{Rule: at.Rule, Ref: at.Ref, Field: string(at.Field), Expr: text, path: string(at.Path),
		Message: "the namespace is computed with ${}: without crossNamespace: true on the ref, any namespace but the parent's own fails the parent's reconcile when evaluated; say crossNamespace: true to read other namespaces, or use " + ownNamespace})
}

// refReads returns the ids of the refs that a checked expression reads through
// `refs.X`, `refs.?X` or `refs["X"]`, reporting ids that are not refs of the rule. An
// expression that uses `refs` any other way reads every ref.
func (c *compiler) refReads(w where, source, src string, off int, checked *cel.Ast) ([]string, bool) {
	native := checked.NativeRep()
	var reads []string
	ok := true
	all := false
	exprcheck.Visit(native.Expr(), func(e celast.Expr) bool {
		if id, isRead, constant := exprcheck.VarAccess(e, celenv.Refs); isRead {
			switch {
			case !constant:
				all = true
			case !slices.Contains(c.refIDs, id):
				ok = false
				loc := native.SourceInfo().GetStartLocation(e.ID())
				c.fail(w, source, exprcheck.Column(source, off, exprcheck.RuneOffset(src, loc)), fmt.Sprintf("unknown ref '%s'%s", id, parse.DidYouMean(id, c.refIDs)))
			case !slices.Contains(reads, id):
				reads = append(reads, id)
			}
			return !constant
		}
		if e.Kind() == celast.IdentKind && e.AsIdent() == celenv.Refs {
			all = true
		}
		return true
	})
	if all {
		return slices.Clone(c.refIDs), ok
	}
	return reads, ok
}

// orderIDs sorts ids so that each comes after every id it reads, keeping the given
// order otherwise, or returns the dependency cycles among them.
func orderIDs(ids []string, reads map[string][]string) ([]string, [][]string) {
	if cycles := exprcheck.Cycles(ids, reads); len(cycles) > 0 {
		return nil, cycles
	}
	placed := make(map[string]bool, len(ids))
	ordered := make([]string, 0, len(ids))
	for progress := true; progress && len(ordered) < len(ids); {
		progress = false
		for _, id := range ids {
			if placed[id] || slices.ContainsFunc(reads[id], func(dep string) bool { return !placed[dep] }) {
				continue
			}
			placed[id] = true
			ordered = append(ordered, id)
			progress = true
			break
		}
	}
	return ordered, nil
}

// refsTypeName names the declared type of `refs`; nested types are named by their path
// from it (Refs.settings.data), as CEL type errors show them.
const refsTypeName = "Refs"

// refsDeclType declares `refs` as an object with one field per ref: the ref kind's
// object type where its schema is known, a list of it for a selector ref, dyn otherwise.
// It returns nil, for a map of dyn, when no ref's kind has a schema.
func refsDeclType(src []*refSource, schemas SchemaSource) *apiservercel.DeclType {
	fields := map[string]*apiservercel.DeclField{}
	typed := false
	for _, rs := range src {
		gv, msg := parseGroupVersion(rs.APIVersion)
		if !childIDPattern.MatchString(rs.ID) || msg != "" || !kindPattern.MatchString(rs.Kind) {
			continue
		}
		t := apiservercel.DynType
		// The type of one object is named by its path from Refs (see declType).
		name := refsTypeName + "." + rs.ID
		if rs.Selector != nil {
			name += ".@idx"
		}
		if s := schemas.KindSchema(gv.WithKind(rs.Kind)); s != nil {
			if dt := declType(s, true, name); dt.IsObject() {
				t, typed = dt, true
			}
		}
		if rs.Selector != nil {
			t = apiservercel.NewListType(t, -1)
		}
		fields[rs.ID] = apiservercel.NewDeclField(rs.ID, t, false, nil, nil)
	}
	if !typed {
		return nil
	}
	return apiservercel.NewObjectType(refsTypeName, fields)
}

// RefTypeChecked reports whether expressions reading ref were type-checked against a
// schema of its kind; without one it is dynamically typed.
func (r *Rule) RefTypeChecked(ref *Ref) bool {
	if r.refsType == nil {
		return false
	}
	f, ok := r.refsType.Fields[ref.ID]
	return ok && f.Type != apiservercel.DynType && (f.Type.ElemType == nil || f.Type.ElemType != apiservercel.DynType)
}

// refType is the declared type of one object of ref, or nil.
func (r *Rule) refType(ref *Ref) *apiservercel.DeclType {
	if r.refsType == nil {
		return nil
	}
	f, ok := r.refsType.Fields[ref.ID]
	if !ok {
		return nil
	}
	if ref.Selector {
		return f.Type.ElemType
	}
	return f.Type
}

// labelSelector decodes an evaluated selector map.
func labelSelector(v any) (*metav1.LabelSelector, error) {
	return parse.LabelSelector(v)
}
