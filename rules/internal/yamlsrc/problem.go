package yamlsrc

import (
	"fmt"
	"strings"
)

// This file rewords the YAML parser's cryptic problems: a tab among the indentation, a
// value that holds ": " (YAML reads a second key), a line indented differently from
// its siblings (the parser often blames the line before it).

// Problem rewords the parser's problem on a line (1-based) of data, and returns the
// line the problem is really on.
func Problem(data []byte, line int, problem string) (int, string) {
	lines := strings.Split(string(data), "\n")
	for _, n := range []int{line, line - 1} {
		// The parser may blame the line after the tab.
		if n >= 1 && n <= len(lines) && strings.Contains(lines[n-1], "\t") {
			return n, "tab character; YAML indents with spaces"
		}
	}
	if strings.Contains(problem, "mapping values are not allowed") && line >= 1 && line <= len(lines) {
		if hint := colonInValue(lines[line-1]); hint != "" {
			return line, hint
		}
	}
	for _, s := range []string{"mapping values are not allowed", "did not find expected key", "did not find expected '-' indicator", "could not find expected ':'"} {
		if !strings.Contains(problem, s) {
			continue
		}
		if n, levels := misindented(lines, line-1, line+1); n > 0 {
			return n, fmt.Sprintf("this line is indented by %d spaces, %s: the keys of one map must line up, indented with spaces",
				indentOf(lines[n-1]), levels)
		}
		return line, problem + fmt.Sprintf(" (bad indentation near line %d? the keys of one map must line up, indented with spaces)", line)
	}
	return line, problem
}

// colonInValue says how to quote the value of a `key: value` line whose unquoted value
// holds ": ", which YAML reads as another key; "" when the line is not one.
func colonInValue(line string) string {
	text := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- "))
	key, value, ok := strings.Cut(text, ": ")
	value = strings.TrimSpace(value)
	if !ok || value == "" || strings.ContainsAny(value[:1], `'"{[|>`) || !strings.Contains(value, ": ") {
		return ""
	}
	quoted := `"` + value + `"`
	if strings.Contains(value, `"`) {
		quoted = "'" + strings.ReplaceAll(value, "'", "''") + "'"
	}
	return fmt.Sprintf("the value of %s holds \": \", which YAML reads as another key: quote this value (%s: %s)", key, key, quoted)
}

// misindented finds, among lines from..to (1-based), the first whose indentation
// matches no enclosing key's (it is shallower than the line before it and deeper than
// the key it would belong to), and lists the indentations around it. It returns 0 when
// none does.
func misindented(lines []string, from, to int) (int, string) {
	var open []int // the indentations of the enclosing keys and list items
	for i, l := range lines {
		n := i + 1
		if n > to {
			break
		}
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		ind := indentOf(l)
		popped := -1
		for len(open) > 0 && open[len(open)-1] > ind {
			popped, open = open[len(open)-1], open[:len(open)-1]
		}
		if popped >= 0 && n >= from && (len(open) == 0 || open[len(open)-1] < ind) {
			below := 0
			if len(open) > 0 {
				below = open[len(open)-1]
			}
			return n, fmt.Sprintf("between the keys at %d and at %d spaces above it", below, popped)
		}
		if len(open) == 0 || open[len(open)-1] < ind {
			open = append(open, ind)
		}
		if strings.HasPrefix(t, "- ") {
			open = append(open, ind+2) // the keys of the item's map
		}
	}
	return 0, ""
}

func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }
