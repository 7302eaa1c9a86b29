package rules

import (
	"fmt"
	"maps"
	"strings"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules/internal/celenv"
	"github.com/kubecel/kubecel/rules/internal/exprcheck"
)

// Names computed from Secret data. An object's name is everywhere: in Events, logs,
// conditions, errors, the output of every command, and in the API for whoever may list
// its kind. So Load finds the children whose name or namespace, and the refs whose name,
// namespace or selector, an expression computes from Secret data (Child.SecretName,
// Ref.SecretName), kubecel shows those names as Withheld (ShowObject, ShowManifest,
// Lookup.Object), and `check` warns about each: kubecel can withhold a name from what it
// writes and prints, not from the API server.
//
// What counts as Secret data is finer here than for error texts (sensitive.go), so that
// the common `${parent.metadata.name}-copy` of a rule over Secrets is not flagged: an
// expression computes a name from Secret data when it reads a Secret (or a child filled
// from one, or `each` of a forEach over Secret data) other than through its
// metadata.name or metadata.namespace, or reads the metadata of an object whose own name
// is computed from Secret data.

// Withheld stands, in messages, logs and output, for a name computed from Secret data.
const Withheld = "<withheld>"

// namesRef reports whether the ref computes its name, namespace or selector from Secret
// data (the refs it reads are marked already).
func (s *sensitivity) namesRef(ref *Ref, progs []*program) bool {
	for _, p := range progs {
		if p.w.Ref == ref.ID && s.readsSecret(p, false) {
			return true
		}
	}
	return false
}

// namesChild reports whether the child computes its objects' names or namespaces from
// Secret data (the refs and the children it reads are marked already).
func (s *sensitivity) namesChild(ch *Child, progs []*program) bool {
	each := false
	for _, p := range progs {
		if p.w.Child == ch.ID && p.w.Ref == "" && string(p.w.Field) == "forEach" {
			each = s.readsSecret(p, false)
		}
	}
	s.eachData[ch.ID] = each
	for _, p := range progs {
		if p.w.Child == ch.ID && p.w.Ref == "" && namesObject(string(p.w.Field)) && s.readsSecret(p, each) {
			return true
		}
	}
	return false
}

// namesObject reports whether an expression at field of a child computes its name or
// namespace.
func namesObject(field string) bool {
	switch field {
	case "expr", "template.metadata", "template.metadata.name", "template.metadata.namespace":
		return true
	}
	return false
}

// readsSecret reports whether the expression reads Secret data, or a name computed from
// it (see the comment at the top); each is true when `each` holds Secret data.
func (s *sensitivity) readsSecret(p *program, each bool) bool {
	return s.reads(p, each, true)
}

// reads is readsSecret; keys is false to leave out the reads of a Secret's data that
// read only its keys (secretkeys.go).
func (s *sensitivity) reads(p *program, each, keys bool) bool {
	if p == nil || p.checked == nil {
		return false
	}
	found := false
	// ancestors are the expressions around e, the nearest last.
	var ancestors []celast.Expr
	var walk func(e celast.Expr)
	walk = func(e celast.Expr) {
		if found || e == nil {
			return
		}
		if e.Kind() == celast.IdentKind {
			fields := selections(e, ancestors)
			if !keys && keysOnly(fields, ancestors) {
				return
			}
			if s.secretAccess(e.AsIdent(), fields, each) {
				found = true
			}
			return
		}
		ancestors = append(ancestors, e)
		for _, sub := range exprcheck.SubExprs(e) {
			walk(sub)
		}
		ancestors = ancestors[:len(ancestors)-1]
	}
	walk(p.checked.NativeRep().Expr())
	return found
}

// secretAccess decides for one read of variable name, followed by the selections
// fields (refs.<id>, children.<id>, then .metadata.name...), whether what it reads is
// Secret data or a name computed from it.
func (s *sensitivity) secretAccess(name string, fields []string, each bool) bool {
	var secret, named bool // the object holds Secret data; its name is computed from some
	switch name {
	case celenv.Parent, celenv.Parents:
		secret = s.parent
	case celenv.Each:
		secret = each
	case celenv.Refs, celenv.Children:
		if len(fields) == 0 {
			// refs or children as a whole: whatever of them is Secret data.
			return s.anySecret()
		}
		id := fields[0]
		fields = fields[1:]
		if name == celenv.Refs {
			secret, named = s.dataRefs[id], s.namedRefs[id]
		} else {
			secret, named = s.dataChildren[id], s.namedChildren[id]
		}
	default:
		return false
	}
	nameOnly := len(fields) >= 2 && fields[0] == "metadata" && (fields[1] == "name" || fields[1] == "namespace")
	switch {
	case secret:
		return !nameOnly || named
	case named:
		return nameOnly || len(fields) == 0 || len(fields) == 1 && fields[0] == "metadata"
	}
	return false
}

// anySecret reports whether any ref or child of the rule holds Secret data or has a
// name computed from it.
func (s *sensitivity) anySecret() bool {
	for _, m := range []map[string]bool{s.refs, s.children} {
		for _, v := range m {
			if v {
				return true
			}
		}
	}
	return false
}

// selections returns the fields selected, in order, from the value of ident:
// ident.a.b, ident.?a or ident["a"], as far as they are literal. ancestors are the
// expressions around ident, the nearest last.
func selections(ident celast.Expr, ancestors []celast.Expr) []string {
	var fields []string
	operand := ident
	for i := len(ancestors) - 1; i >= 0; i-- {
		f, ok := selectField(ancestors[i], operand)
		if !ok {
			break
		}
		fields = append(fields, f)
		operand = ancestors[i]
	}
	return fields
}

// selectField returns the field that e selects from operand: e is operand.f,
// operand.?f or operand["f"].
func selectField(e, operand celast.Expr) (string, bool) {
	switch e.Kind() {
	case celast.SelectKind:
		sel := e.AsSelect()
		if sel.Operand() == operand && !sel.IsTestOnly() {
			return sel.FieldName(), true
		}
	case celast.CallKind:
		call := e.AsCall()
		switch call.FunctionName() {
		case operators.OptSelect, operators.Index, operators.OptIndex:
			args := call.Args()
			if len(args) == 2 && args[0] == operand && args[1].Kind() == celast.LiteralKind {
				if s, ok := args[1].AsLiteral().(types.String); ok {
					return string(s), true
				}
			}
		}
	}
	return "", false
}

// ShowObject names an object of the rule's child (by id) for messages, logs and
// output, as ObjectName does, with its name and namespace Withheld when the child
// computes them from Secret data. An object of a child id the rule no longer has is
// withheld when the rule reads Secret data at all: an earlier version of the rule made
// it, and may have named it so.
func (r *Rule) ShowObject(child string, gk schema.GroupKind, namespace, name string) string {
	if r.WithholdsName(child) {
		if namespace != "" {
			namespace = Withheld
		}
		name = Withheld
	}
	return ObjectName(gk, namespace, name)
}

// ShowManifest returns a child's object for output: RedactSecrets's, and with its
// name and namespace Withheld when the child computes them from Secret data. obj itself
// is never modified.
func (r *Rule) ShowManifest(child string, obj map[string]any) map[string]any {
	out := RedactSecrets(obj)
	if !r.WithholdsName(child) {
		return out
	}
	md, _ := out["metadata"].(map[string]any)
	if md == nil {
		return out
	}
	out, md = maps.Clone(out), maps.Clone(md)
	for _, k := range []string{"name", "namespace"} {
		if _, ok := md[k]; ok {
			md[k] = Withheld
		}
	}
	out["metadata"] = md
	return out
}

// Withholds reports whether what the API server says of the child's objects (its
// messages quote values and names) must be withheld: the child holds Secret data or is
// named from it. For a child id the rule no longer has: whether the rule reads Secret
// data at all.
func (r *Rule) Withholds(child string) bool {
	if ch := r.child(child); ch != nil {
		return ch.Sensitive || ch.SecretName
	}
	return r.sens != nil && (r.sens.parent || r.sens.anySecret())
}

// WithholdsName reports whether the names of the child's objects are shown Withheld:
// the child computes them from Secret data (for a child id the rule no longer has:
// whether the rule reads Secret data at all).
func (r *Rule) WithholdsName(child string) bool {
	if ch := r.child(child); ch != nil {
		return ch.SecretName
	}
	return r.sens != nil && (r.sens.parent || r.sens.anySecret())
}

// Object names the object a ref looked up, for messages and output: "ConfigMap
// team-a/app", with the namespace and name Withheld when the ref computes them from
// Secret data.
func (l Lookup) Object() string {
	if l.Withheld {
		ns := l.Namespace
		if ns != "" {
			ns = Withheld
		}
		return ObjectName(l.GVK.GroupKind(), ns, Withheld)
	}
	return ObjectName(l.GVK.GroupKind(), l.Namespace, l.Name)
}

// ShownSelector is the ref's label selector for messages and output: Withheld when
// the ref computes it from Secret data.
func (l Lookup) ShownSelector() string {
	switch {
	case l.Selector == nil:
		return ""
	case l.Withheld:
		return Withheld
	}
	return l.Selector.String()
}

// nameWarnings are the load warnings about names computed from Secret data: one for
// each child and each ref that computes some.
func (s *sensitivity) nameWarnings(r *Rule, progs []*program) []*Error {
	var out []*Error
	seen := map[string]bool{}
	for _, p := range progs {
		var msg string
		switch {
		case p.w.Ref != "" && s.namedRefs[p.w.Ref] && s.readsSecret(p, false):
			msg = fmt.Sprintf("computes the %s of the object it reads from Secret data: kubecel withholds it in what it writes and prints, but a name or selector is no secret in the API; compute it from something else", refPart(string(p.w.Field)))
		case p.w.Child != "" && p.w.Ref == "" && s.namedChildren[p.w.Child] && namesObject(string(p.w.Field)):
			msg = "names its objects with Secret data: kubecel withholds the name in what it writes and prints, but whoever may list the kind there sees it, and the API server quotes it; compute the name from something else"
		default:
			continue
		}
		key := p.w.Child + "\x00" + p.w.Ref + "\x00" + string(p.w.Field)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, &Error{Rule: r.Name, Child: p.w.Child, Ref: p.w.Ref, Field: string(p.w.Field), Expr: p.source, path: string(p.w.Path), Message: msg})
	}
	return out
}

// refPart names the part of a ref a field computes.
func refPart(field string) string {
	switch {
	case strings.HasPrefix(field, "selector"):
		return "selector"
	case field == "namespace":
		return "namespace"
	}
	return "name"
}
