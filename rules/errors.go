package rules

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/kubecel/kubecel/rules/internal/parse"
)

// Error is one problem found while loading a rules file or evaluating a rule. It names
// the place: the rule, the child, the field inside it and the expression.
type Error struct {
	// Rule is the rule name; empty for problems outside any rule.
	Rule string
	// Child is the child id; empty when the problem is not about one child.
	Child string
	// Ref is the ref id when the problem is about one of the rule's refs; Field is then
	// relative to the ref.
	Ref string
	// Field is the path of the offending field, relative to the child when Child is set
	// (e.g. "template.spec.ports[0].port", "readyWhen"), else relative to the rule (e.g.
	// "parent.when", "status.fields.url"), or to the file when Rule is empty.
	Field string
	// Expr is the source text of the field when it holds CEL or a template string.
	Expr string
	// Source names the document the problem is in, as given in Document.Source (a file,
	// a ConfigMap key); empty for the single unnamed document of Load.
	Source string
	// Line is the line of the field in its document (counted from the document's
	// first line, across the --- separators of a multi-document file); 0 when unknown.
	Line int
	// Column is the 1-based position of the problem inside Expr (counted in characters
	// from its start, newlines included); 0 when unknown.
	Column int
	// FileLine and FileColumn are where Column falls in the document: its line (counted
	// as Line is) and the 1-based column in that line, in characters. Both are 0 when
	// Column is, or when the value is written so that its characters cannot be mapped
	// back (a folded block, a plain or quoted string over several lines, escapes).
	FileLine, FileColumn int
	// Message says what is wrong and, where obvious, what to do.
	Message string
	// Err is the underlying cause, if any (for example a context deadline).
	Err error

	// path is Field prefixed with the rule's and child's position in the file, used to
	// find Line.
	path string
	// first is the path of what a duplicate repeats; setLines cites its line.
	first string
}

// Error renders the problem on one line:
//
//	rule "webapp" child "service": template.spec.ports[0].port: ${parent.spec.prot}: undefined field 'prot' (did you mean 'port'?)
func (e *Error) Error() string {
	var parts []string
	switch {
	case e.Source != "" && e.Line > 0:
		parts = append(parts, fmt.Sprintf("%s:%d", e.Source, e.Line))
	case e.Source != "":
		parts = append(parts, e.Source)
	case e.Line > 0:
		parts = append(parts, fmt.Sprintf("line %d", e.Line))
	}
	var place []string
	if e.Rule != "" {
		place = append(place, fmt.Sprintf("rule %q", e.Rule))
	}
	if e.Child != "" {
		place = append(place, fmt.Sprintf("child %q", e.Child))
	}
	if e.Ref != "" {
		place = append(place, fmt.Sprintf("ref %q", e.Ref))
	}
	if len(place) > 0 {
		parts = append(parts, strings.Join(place, " "))
	}
	if e.Field != "" {
		parts = append(parts, e.Field)
	}
	if e.Expr != "" {
		parts = append(parts, oneLine(e.Expr))
	}
	return strings.Join(append(parts, e.Message), ": ")
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Caret returns Expr's line that holds Column and, below it, a caret under the column,
// for showing an error the way compilers do. It returns "" when the column is unknown.
func (e *Error) Caret() string {
	if e.Column <= 0 || e.Expr == "" {
		return ""
	}
	runes := []rune(e.Expr)
	pos := min(e.Column-1, len(runes))
	start := pos
	for start > 0 && runes[start-1] != '\n' {
		start--
	}
	end := pos
	for end < len(runes) && runes[end] != '\n' {
		end++
	}
	return "| " + string(runes[start:end]) + "\n| " + strings.Repeat(".", pos-start) + "^"
}

// ErrorList is every problem found by Load, or every failure of one Evaluate.
type ErrorList []*Error

// Error renders one problem per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes the individual errors to errors.Is and errors.As.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// errorsOrNil returns l as an error, or nil when it is empty.
func (l ErrorList) errorsOrNil() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// oneLine shortens a multi-line expression for a one-line message.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " ..."
	}
	const max = 120
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max]) + "..."
	}
	return s
}

// Field paths and places are package parse's.
type (
	// path is a field path, such as `template.spec.ports[0].port`.
	path = parse.Path
	// where locates a value: rule, child or ref, field and full path.
	where = parse.Where
)
