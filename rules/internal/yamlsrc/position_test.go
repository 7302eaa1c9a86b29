package yamlsrc

import (
	"testing"

	yamlv3 "go.yaml.in/yaml/v3"
)

// scalar parses data and returns the value node of its top-level key "when".
func scalar(t *testing.T, data string) *yamlv3.Node {
	t.Helper()
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal([]byte(data), &doc); err != nil {
		t.Fatal(err)
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "when" {
			return m.Content[i+1]
		}
	}
	t.Fatalf("no key when in %q", data)
	return nil
}

// TestPosition finds, for a value written in each YAML style, the file position of its
// '+' (at column 16 of the one-line values): known where the file holds the value as it
// is, 0, 0 where escapes or folding changed it.
func TestPosition(t *testing.T) {
	const head = "name: web\n"
	tests := []struct {
		name, when   string
		column       int
		line, fileCo int
	}{
		{name: "plain", when: "when: size(parent) > + 1\n", column: 16, line: 2, fileCo: 22},
		{name: "double quoted", when: "when: \"size(parent) > + 1\"\n", column: 16, line: 2, fileCo: 23},
		{name: "single quoted", when: "when: 'size(parent) > + 1'\n", column: 16, line: 2, fileCo: 23},
		{name: "literal block", when: "when: |\n  has(parent) &&\n    size(parent) > + 1\n", column: 33, line: 4, fileCo: 20},
		{name: "literal block, first line", when: "when: |\n  has(parent) &&\n    size(parent) > + 1\n", column: 5, line: 3, fileCo: 7},
		{name: "escaped", when: "when: \"'\\u0061' > + 1\"\n", column: 8},
		{name: "quote in single quotes", when: "when: '''a'' > + 1'\n", column: 8},
		{name: "folded block", when: "when: >\n  has(parent) &&\n  size(parent) > + 1\n", column: 30},
		{name: "plain over lines", when: "when: has(parent) &&\n  size(parent) > + 1\n", column: 30},
		{name: "column past the end", when: "when: x\n", column: 3},
		{name: "column 0", when: "when: x\n", column: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := head + tt.when
			n := scalar(t, data)
			line, col := Position([]byte(data), n, n.Value, tt.column)
			if line != tt.line || col != tt.fileCo {
				t.Errorf("Position(column %d of %q) = %d, %d, want %d, %d", tt.column, n.Value, line, col, tt.line, tt.fileCo)
			}
		})
	}
	t.Run("another text", func(t *testing.T) {
		data := head + "when: a + b\n"
		if line, col := Position([]byte(data), scalar(t, data), "a + c", 1); line != 0 || col != 0 {
			t.Errorf("Position(a text not the node's) = %d, %d, want 0, 0", line, col)
		}
	})
}
