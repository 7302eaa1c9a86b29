package kro

import (
	"strings"
)

// This file rewrites kro's CEL into kubecel's: the names an expression reads change
// (schema is parent, a resource is children.ID, an external reference is refs.ID, a
// forEach iterator is each), and nothing else does.

// names maps the names kro expressions read to kubecel's.
type names map[string]string

// with returns a copy of n with more names.
func (n names) with(more map[string]string) names {
	out := names{}
	for k, v := range n {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// rewrite rewrites the identifiers of a CEL expression that n maps, where they stand
// as names of their own: not after a dot (a field), not inside a string literal.
func (n names) rewrite(expr string) string {
	var b strings.Builder
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'':
			j := skipString(expr, i)
			b.WriteString(expr[i:j])
			i = j
		case isIdentStart(c):
			j := i + 1
			for j < len(expr) && isIdentPart(expr[j]) {
				j++
			}
			word := expr[i:j]
			if to, ok := n[word]; ok && !afterDot(expr, i) {
				word = to
			}
			b.WriteString(word)
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// afterDot reports whether the identifier at i follows a dot (spaces between).
func afterDot(expr string, i int) bool {
	for i--; i >= 0; i-- {
		switch expr[i] {
		case ' ', '\t', '\n':
			continue
		case '.':
			return true
		}
		return false
	}
	return false
}

// skipString returns the index after the string literal that starts at i (a quote),
// triple-quoted or not, with backslash escapes.
func skipString(expr string, i int) int {
	q := expr[i]
	if strings.HasPrefix(expr[i:], strings.Repeat(string(q), 3)) {
		end := strings.Index(expr[i+3:], strings.Repeat(string(q), 3))
		if end < 0 {
			return len(expr)
		}
		return i + 3 + end + 3
	}
	for j := i + 1; j < len(expr); j++ {
		switch expr[j] {
		case '\\':
			j++
		case q:
			return j + 1
		}
	}
	return len(expr)
}

func isIdentStart(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isIdentPart(c byte) bool { return isIdentStart(c) || ('0' <= c && c <= '9') }

// segment is one ${...} of a string: its expression and where it stands.
type segment struct {
	start, end int // of the whole ${...}
	expr       string
}

// segments finds the ${...} of a string, with braces and string literals inside an
// expression skipped over.
func segments(s string) []segment {
	var out []segment
	for i := 0; i < len(s); i++ {
		if !strings.HasPrefix(s[i:], "${") {
			continue
		}
		depth := 0
		for j := i + 2; j < len(s); j++ {
			switch c := s[j]; {
			case c == '"' || c == '\'':
				j = skipString(s, j) - 1
			case c == '{':
				depth++
			case c == '}' && depth > 0:
				depth--
			case c == '}':
				out = append(out, segment{start: i, end: j + 1, expr: s[i+2 : j]})
				i = j
				j = len(s)
			}
		}
	}
	return out
}

// template rewrites every ${...} of a string.
func (n names) template(s string) string {
	segs := segments(s)
	if len(segs) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, seg := range segs {
		b.WriteString(s[last:seg.start])
		b.WriteString("${" + n.rewrite(seg.expr) + "}")
		last = seg.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// bare is the CEL of a kro condition, which is a whole "${expr}": the expression,
// rewritten; a string that is not one ${} is taken as CEL as it is.
func (n names) bare(s string) string {
	s = strings.TrimSpace(s)
	if segs := segments(s); len(segs) == 1 && segs[0].start == 0 && segs[0].end == len(s) {
		s = segs[0].expr
	}
	return n.rewrite(strings.TrimSpace(s))
}

// values rewrites every string in a template tree.
func (n names) values(v any) any {
	switch t := v.(type) {
	case string:
		return n.template(t)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = n.values(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = n.values(x)
		}
		return out
	}
	return v
}
