package rules

import (
	"errors"
	"testing"
)

// TestFilePosition loads rules with an error in an expression written in each YAML
// style and checks the position in the file that the error gets.
func TestFilePosition(t *testing.T) {
	const head = "apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n- name: web\n  parent:\n    apiVersion: v1\n    resource: configmaps\n"
	for _, tc := range []struct {
		name, when   string
		line, column int
		wantKnown    bool
	}{
		// The error is at the + in each; head has 7 lines, so when is on line 8.
		{name: "plain", when: "    when: size(parent.data) > + 1\n", line: 8, column: 31, wantKnown: true},
		{name: "double quoted", when: "    when: \"size(parent.data) > + 1\"\n", line: 8, column: 32, wantKnown: true},
		{name: "single quoted", when: "    when: 'size(parent.data) > + 1'\n", line: 8, column: 32, wantKnown: true},
		{name: "escaped", when: "    when: \"'\\u0061' > + 1\"\n", line: 8},
		{name: "quote in single quotes", when: "    when: '''a'' > + 1'\n", line: 8},
		{name: "literal block", when: "    when: |\n      has(parent.data) &&\n        size(parent.data) > + 1\n", line: 10, column: 29, wantKnown: true},
		{name: "folded block", when: "    when: >\n      has(parent.data) &&\n      size(parent.data) > + 1\n", line: 8},
		{name: "plain over lines", when: "    when: has(parent.data) &&\n      size(parent.data) > + 1\n", line: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load([]byte(head+tc.when), Options{})
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("want a load error, got %v", err)
			}
			var e *Error
			for _, x := range list {
				if x.Field == "parent.when" {
					e = x
				}
			}
			if e == nil || e.Column == 0 {
				t.Fatalf("the error has no column in the expression: %v", e)
			}
			line, column := e.FileLine, e.FileColumn
			if !tc.wantKnown {
				if e.FileLine != 0 {
					t.Errorf("FileLine %d, want 0: the expression's characters are not the file's", e.FileLine)
				}
				line = e.Line
			}
			if line != tc.line || column != tc.column {
				t.Errorf("position %d:%d (field line %d), want %d:%d", line, column, e.Line, tc.line, tc.column)
			}
		})
	}
}
