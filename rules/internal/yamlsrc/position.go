package yamlsrc

import (
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// Position returns the line and column in data (1-based, the column in characters) of
// the character at the 1-based column of expr, the text of the scalar node n parsed
// from data; 0, 0 when the text of the value in data is not expr character for
// character (escapes, a folded block, a plain scalar over several lines).
func Position(data []byte, n *yamlv3.Node, expr string, column int) (int, int) {
	if n.Value != expr || column < 1 {
		return 0, 0
	}
	lines := strings.Split(string(data), "\n")
	// line and col are the 0-based line in expr of the character at column, and its
	// 0-based column in that line.
	before := []rune(expr)
	if column-1 > len(before) {
		return 0, 0
	}
	before = before[:column-1]
	line, col := 0, 0
	for _, r := range before {
		col++
		if r == '\n' {
			line, col = line+1, 0
		}
	}
	exprLines := strings.Split(expr, "\n")
	switch n.Style {
	case 0, yamlv3.DoubleQuotedStyle, yamlv3.SingleQuotedStyle:
		// One line, as written: the text follows the opening quote, if any.
		if len(exprLines) > 1 || n.Line > len(lines) {
			return 0, 0
		}
		start := n.Column - 1
		if n.Style != 0 {
			start++
		}
		text := []rune(lines[n.Line-1])
		if start+len([]rune(expr)) > len(text) || string(text[start:start+len([]rune(expr))]) != expr {
			return 0, 0 // escapes, or '' in a single-quoted string
		}
		return n.Line, start + col + 1
	case yamlv3.LiteralStyle:
		// A block (|): each line of expr is a line of the file after the indicator's,
		// behind the block's indentation.
		at := n.Line + line // the index in lines of expr's line `line` (file line at+1)
		if at > len(lines) {
			return 0, 0
		}
		text := strings.TrimSuffix(lines[at], "\r")
		indent, ok := strings.CutSuffix(text, exprLines[line])
		if !ok || strings.Trim(indent, " ") != "" {
			return 0, 0
		}
		return at + 1, len(indent) + col + 1
	}
	return 0, 0
}
