package rules

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubecel/kubecel/rules/internal/exprcheck"
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
			tested, _ := exprcheck.ParentReads(p.checked)
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
		tested, reads := exprcheck.ParentReads(p.checked)
		for path := range guards[""] {
			tested[path] = true
		}
		for path := range guards[p.w.Child] {
			tested[path] = true
		}
		warned := map[string]bool{}
		for _, path := range reads {
			at := exprcheck.OptionalStep(schema, path)
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
					field, path[at], exprcheck.OptionalAdvice(field))})
		}
	}
	return out
}
