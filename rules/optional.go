package rules

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	celast "github.com/google/cel-go/common/ast"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubecel/kubecel/rules/internal/celenv"
)

// This file is about fields of the parent that its schema marks optional: reading one
// with a plain selection (parent.spec.suffix) fails with "no such key" on every parent
// that leaves it out. Load warns about such reads where the CRD's schema is known; an
// evaluation that fails that way says how to read the field instead.

// optionalWarnings lists, for every expression of a rule, the selections of parent
// fields that the parent's schema neither requires nor defaults, unless the expression
// tests the same field with has(). The parent's apiVersion, kind, metadata, spec and
// status are taken as present: whoever writes a parent sets them.
func optionalWarnings(r *Rule, schema *apiextensionsv1.JSONSchemaProps, progs []*program) []*Error {
	if schema == nil {
		return nil
	}
	// What the rule's and each child's when test with has() guards all their
	// expressions.
	guards := map[string]map[string]bool{}
	for _, p := range progs {
		if p.checked != nil && (p.w.Field == "parent.when" || (p.w.Child != "" && p.w.Field == "when")) {
			tested, _ := parentReads(p)
			for path := range tested {
				if guards[p.w.Child] == nil {
					guards[p.w.Child] = map[string]bool{}
				}
				guards[p.w.Child][path] = true
			}
		}
	}
	var out []*Error
	for _, p := range progs {
		if p.checked == nil {
			continue
		}
		tested, reads := parentReads(p)
		for path := range guards[""] {
			tested[path] = true
		}
		for path := range guards[p.w.Child] {
			tested[path] = true
		}
		warned := map[string]bool{}
		for _, path := range reads {
			at := optionalStep(schema, path)
			if at < 0 {
				continue
			}
			field := "parent." + strings.Join(path[:at+1], ".")
			if tested[strings.Join(path[:at+1], ".")] || warned[field] {
				continue
			}
			warned[field] = true
			out = append(out, &Error{Rule: r.Name, Child: p.w.Child, Ref: p.w.Ref, Field: string(p.w.Field), Expr: p.source, path: string(p.w.Path),
				Message: fmt.Sprintf("%s is optional in the parent's schema (not required, no default), and a parent without it fails here with \"no such key: %s\": %s",
					field, path[at], optionalAdvice(field))})
		}
	}
	return out
}

// parentReads lists the parent fields an expression tests with has() (joined with
// dots) and those it selects.
func parentReads(p *program) (tested map[string]bool, reads [][]string) {
	tested = map[string]bool{}
	visit(p.checked.NativeRep().Expr(), func(e celast.Expr) bool {
		if e.Kind() != celast.SelectKind {
			return true
		}
		path, ok := parentPath(e)
		if !ok {
			return true
		}
		if e.AsSelect().IsTestOnly() {
			tested[strings.Join(path, ".")] = true
			return false
		}
		reads = append(reads, path)
		return false // its operand is a shorter path of the same read
	})
	return tested, reads
}

// parentPath returns the field names of a selection chain that starts at the parent
// (parent.spec.suffix: spec, suffix).
func parentPath(e celast.Expr) ([]string, bool) {
	var path []string
	for e.Kind() == celast.SelectKind {
		path = append(path, e.AsSelect().FieldName())
		e = e.AsSelect().Operand()
	}
	if e.Kind() != celast.IdentKind || e.AsIdent() != celenv.Parent || len(path) == 0 {
		return nil, false
	}
	slices.Reverse(path)
	return path, true
}

// optionalStep returns the index of the first field of path below the parent's
// top-level fields that the schema neither requires nor defaults, or -1. It stops at a
// part of the schema it cannot follow (a map, a list, free-form objects).
func optionalStep(s *apiextensionsv1.JSONSchemaProps, path []string) int {
	if path[0] == "metadata" {
		return -1
	}
	for i, name := range path {
		if s == nil || s.Type != "object" || len(s.Properties) == 0 {
			return -1
		}
		prop, ok := s.Properties[name]
		if !ok {
			return -1
		}
		if i > 0 && !slices.Contains(s.Required, name) && prop.Default == nil {
			return i
		}
		s = &prop
	}
	return -1
}

// optionalAdvice says how to read a field that may be absent.
func optionalAdvice(field string) string {
	i := strings.LastIndex(field, ".")
	return fmt.Sprintf("write %s.?%s.orValue(DEFAULT) for a default, or test it with has(%s)", field[:i], field[i+1:], field)
}

// noSuchKey matches CEL's error for a missing map key or field.
var noSuchKey = regexp.MustCompile(`^no such key: ([A-Za-z_][A-Za-z0-9_]*)$`)

// missingKeyHint says, for an expression that failed with "no such key: K", which
// selection of K it read and how to read it when it may be absent; "" when the error is
// another, or the expression selects no field K.
func missingKeyHint(p *program, err error) string {
	m := noSuchKey.FindStringSubmatch(err.Error())
	if m == nil || p == nil || p.checked == nil {
		return ""
	}
	var field string
	visit(p.checked.NativeRep().Expr(), func(e celast.Expr) bool {
		if e.Kind() == celast.SelectKind && !e.AsSelect().IsTestOnly() && e.AsSelect().FieldName() == m[1] {
			field = selectionText(e)
		}
		return field == ""
	})
	if field == "" {
		return ""
	}
	return fmt.Sprintf(" (%s is not set; %s)", field, optionalAdvice(field))
}

// selectionText renders a selection chain (parent.spec.suffix), or "" when it does not
// start at a variable.
func selectionText(e celast.Expr) string {
	var path []string
	for e.Kind() == celast.SelectKind {
		path = append(path, e.AsSelect().FieldName())
		e = e.AsSelect().Operand()
	}
	if e.Kind() != celast.IdentKind {
		return ""
	}
	path = append(path, e.AsIdent())
	slices.Reverse(path)
	return strings.Join(path, ".")
}
