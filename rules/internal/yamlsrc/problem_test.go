package yamlsrc

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	yamlv3 "go.yaml.in/yaml/v3"
)

// TestProblem rewords what the YAML parser says about documents with the mistakes
// people make, giving the parser's own line and problem as it reports them.
func TestProblem(t *testing.T) {
	tests := []struct {
		name     string
		doc      string
		wantLine int
		want     string
	}{
		{
			name:     "tab in the indentation",
			doc:      "name: web\nparent:\n\tapiVersion: v1\n",
			wantLine: 3,
			want:     "tab character; YAML indents with spaces",
		},
		{
			name:     "misindented key",
			doc:      "name: web\nparent:\n  apiVersion: v1\n resource: configmaps\n",
			wantLine: 4,
			want:     "this line is indented by 1 spaces, between the keys at 0 and at 2 spaces above it: the keys of one map must line up, indented with spaces",
		},
		{
			name:     "unquoted value with a colon",
			doc:      "data:\n  greeting: ${parent.metadata.name + ': x'}\n",
			wantLine: 2,
			want:     `the value of greeting holds ": ", which YAML reads as another key: quote this value (greeting: "${parent.metadata.name + ': x'}")`,
		},
		{
			name:     "unquoted value with a colon and double quotes",
			doc:      "data:\n  greeting: ${\"a: \" + x}\n",
			wantLine: 2,
			want:     `the value of greeting holds ": ", which YAML reads as another key: quote this value (greeting: '${"a: " + x}')`,
		},
		{
			name:     "key indented under a scalar",
			doc:      "name: web\nparent: x\n   resource: configmaps\n",
			wantLine: 3,
			want:     "mapping values are not allowed in this context (bad indentation near line 3? the keys of one map must line up, indented with spaces)",
		},
		{
			name:     "other problems pass through",
			doc:      "a: [1, 2\n",
			wantLine: 1,
			want:     "did not find expected ',' or ']'",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v any
			err := yamlv3.Unmarshal([]byte(tt.doc), &v)
			if err == nil {
				t.Fatalf("Unmarshal(%q) succeeded, want a syntax error", tt.doc)
			}
			line, problem := parserProblem(t, err)
			gotLine, got := Problem([]byte(tt.doc), line, problem)
			if diff := cmp.Diff([]any{tt.wantLine, tt.want}, []any{gotLine, got}); diff != "" {
				t.Errorf("Problem(line %d, %q) (-want +got):\n%s", line, problem, diff)
			}
		})
	}
}

// parserProblem takes the line and problem out of an error of the YAML parser
// ("yaml: line N: problem").
func parserProblem(t *testing.T, err error) (int, string) {
	t.Helper()
	rest, ok := strings.CutPrefix(err.Error(), "yaml: line ")
	if !ok {
		t.Fatalf("parser error %q has no line", err)
	}
	n, problem, _ := strings.Cut(rest, ": ")
	line := 0
	for _, c := range n {
		line = line*10 + int(c-'0')
	}
	return line, problem
}
