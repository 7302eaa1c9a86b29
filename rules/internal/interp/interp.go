// Package interp splits the strings of a rules file's templates: literal text with
// embedded `${expr}` CEL expressions, where `$${` is a literal `${`. It knows CEL's
// lexical syntax only as far as finding the `}` that closes an expression needs (map
// literals, string literals of every form, comments); compiling the expressions is the
// caller's.
package interp

import (
	"fmt"
	"strings"
)

// Segment is one piece of a template string.
type Segment struct {
	// Text is the literal text (escapes resolved) or the expression's source.
	Text string
	// Expr is true when Text is a CEL expression.
	Expr bool
	// Offset is the byte offset of Text in the template string; for an expression, the
	// first byte after `${`.
	Offset int
}

// Error is a syntax error in a template string.
type Error struct {
	// Offset is the byte offset of the error in the template string.
	Offset int
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// Parse splits s into literal and expression segments. Adjacent literal text is
// merged, so a string without expressions yields at most one segment. Its error is an
// *Error.
func Parse(s string) ([]Segment, error) {
	var segs []Segment
	var lit strings.Builder
	litStart := 0
	flush := func() {
		if lit.Len() > 0 {
			segs = append(segs, Segment{Text: lit.String(), Offset: litStart})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			if lit.Len() == 0 {
				litStart = i
			}
			lit.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end, err := exprEnd(s, i+2)
			if err != nil {
				return nil, err
			}
			src := s[i+2 : end]
			if strings.TrimSpace(src) == "" {
				return nil, &Error{Offset: i, Msg: "empty expression ${}"}
			}
			flush()
			segs = append(segs, Segment{Text: src, Expr: true, Offset: i + 2})
			i = end + 1
		default:
			if lit.Len() == 0 {
				litStart = i
			}
			lit.WriteByte(s[i])
			i++
		}
	}
	flush()
	return segs, nil
}

// IsWholeExpr reports whether segs came from a string s that is exactly `${expr}`,
// whose value keeps the expression's type.
func IsWholeExpr(s string, segs []Segment) bool {
	return len(segs) == 1 && segs[0].Expr && segs[0].Offset == 2 && len(s) == len(segs[0].Text)+3
}

// HasExpr reports whether any segment is an expression.
func HasExpr(segs []Segment) bool {
	for _, sg := range segs {
		if sg.Expr {
			return true
		}
	}
	return false
}

// exprEnd returns the index of the `}` that closes the expression starting at start. It
// skips braces inside nested map literals, string literals and comments.
func exprEnd(s string, start int) (int, error) {
	depth := 0
	for i := start; i < len(s); i++ {
		switch c := s[i]; c {
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return i, nil
			}
			depth--
		case '"', '\'':
			end, ok := stringEnd(s, i, rawPrefix(s, start, i))
			if !ok {
				return 0, &Error{Offset: i, Msg: "unterminated string literal in ${...}"}
			}
			i = end
		case '/':
			if i+1 < len(s) && s[i+1] == '/' {
				nl := strings.IndexByte(s[i:], '\n')
				if nl < 0 {
					i = len(s) - 1
				} else {
					i += nl
				}
			}
		}
	}
	return 0, &Error{Offset: start - 2, Msg: "unterminated ${: missing closing }"}
}

// rawPrefix reports whether the quote at q is preceded by a CEL raw-string prefix (r, R,
// possibly combined with the bytes prefix b or B) that is not the tail of an identifier.
func rawPrefix(s string, start, q int) bool {
	raw := false
	i := q - 1
	for n := 0; n < 2 && i >= start; n, i = n+1, i-1 {
		switch s[i] {
		case 'r', 'R':
			raw = true
			continue
		case 'b', 'B':
			continue
		}
		break
	}
	if i >= start && isIdentByte(s[i]) {
		return false
	}
	return raw
}

func isIdentByte(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// stringEnd returns the index of the last byte of the string literal opening at q.
func stringEnd(s string, q int, raw bool) (int, bool) {
	quote := s[q : q+1]
	if strings.HasPrefix(s[q:], strings.Repeat(quote, 3)) {
		quote = strings.Repeat(quote, 3)
	}
	for i := q + len(quote); i < len(s); i++ {
		if !raw && s[i] == '\\' {
			i++
			continue
		}
		if strings.HasPrefix(s[i:], quote) {
			return i + len(quote) - 1, true
		}
	}
	return 0, false
}

// escapeLiteral returns s with every `${` written as `$${`, so that Parse reads it
// back as the same literal text.
func escapeLiteral(s string) string {
	return strings.ReplaceAll(s, "${", "$${")
}

// format writes segments back as a template string; Parse of the result yields
// equivalent segments. It is the inverse used by the fuzz test.
func format(segs []Segment) string {
	var b strings.Builder
	for _, sg := range segs {
		if sg.Expr {
			fmt.Fprintf(&b, "${%s}", sg.Text)
		} else {
			b.WriteString(escapeLiteral(sg.Text))
		}
	}
	return b.String()
}
