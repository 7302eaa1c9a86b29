package exprcheck

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubecel/kubecel/rules/internal/celenv"
)

// This file is about fields of the parent that its schema marks optional: reading one
// with a plain selection (parent.spec.suffix) fails with "no such key" on every parent
// that leaves it out.

// ParentReads lists the parent fields an expression tests with has() (joined with
// dots) and those it selects.
func ParentReads(checked *cel.Ast) (tested map[string]bool, reads [][]string) {
	tested = map[string]bool{}
	Visit(checked.NativeRep().Expr(), func(e celast.Expr) bool {
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

// OptionalStep returns the index of the first field of path below the parent's
// top-level fields that the schema neither requires nor defaults, or -1. It stops at a
// part of the schema it cannot follow (a map, a list, free-form objects).
func OptionalStep(s *apiextensionsv1.JSONSchemaProps, path []string) int {
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

// OptionalAdvice says how to read a field that may be absent.
func OptionalAdvice(field string) string {
	i := strings.LastIndex(field, ".")
	return fmt.Sprintf("write %s.?%s.orValue(DEFAULT) for a default, or test it with has(%s)", field[:i], field[i+1:], field)
}

// noSuchKey matches CEL's error for a missing map key or field.
var noSuchKey = regexp.MustCompile(`^no such key: ([A-Za-z_][A-Za-z0-9_]*)$`)

// keyName matches the keys noSuchKey does.
var keyName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// MissingKeyHint says, for an expression (checked) that failed with "no such key: K",
// which selection of K it read and how to read it when it may be absent; "" when the
// error is another, or the expression selects no field K.
func MissingKeyHint(checked *cel.Ast, err error) string {
	return SelectionsOf(checked).Hint(err)
}

// Selections are the selection chains an expression reads (parent.spec.suffix), all
// that MissingKeyHint needs of it: a program keeps them rather than its checked AST.
// They are in the order of a walk of the expression from its root, and each field name
// ends only the first chain that ends with it.
type Selections []string

// SelectionsOf lists the selection chains of checked, starting at a variable and ending
// with a field an error's "no such key" can name (an identifier), that are not has()
// tests; nil when there is none or checked is nil.
func SelectionsOf(checked *cel.Ast) Selections {
	if checked == nil {
		return nil
	}
	var out Selections
	Visit(checked.NativeRep().Expr(), func(e celast.Expr) bool {
		if e.Kind() != celast.SelectKind || e.AsSelect().IsTestOnly() {
			return true
		}
		field := e.AsSelect().FieldName()
		if !keyName.MatchString(field) || out.find(field) != "" {
			return true
		}
		if text := selectionText(e); text != "" {
			out = append(out, text)
		}
		return true
	})
	return out
}

// find returns the first chain that ends with field, or "".
func (s Selections) find(field string) string {
	for _, text := range s {
		if text[strings.LastIndex(text, ".")+1:] == field {
			return text
		}
	}
	return ""
}

// Hint is MissingKeyHint for the expression whose selections s are.
func (s Selections) Hint(err error) string {
	m := noSuchKey.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	field := s.find(m[1])
	if field == "" {
		return ""
	}
	return fmt.Sprintf(" (%s is not set; %s)", field, OptionalAdvice(field))
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
