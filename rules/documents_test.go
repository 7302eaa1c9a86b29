package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// docRule is a rules document (header on lines 1-3) with one rule named name on line 4
// whose child's template name is the expression nameExpr (line 11).
func docRule(name, nameExpr string) string {
	return `apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: ` + name + `
    parent: {apiVersion: v1, resource: namespaces}
    children:
      - id: cm
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "` + nameExpr + `", namespace: default}
`
}

// placedError is what these tests compare of an *Error.
type placedError struct {
	Source  string
	Line    int
	Rule    string
	Field   string
	Message string
}

func placedErrors(t *testing.T, err error) []placedError {
	t.Helper()
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %v (%T) is not an ErrorList", err, err)
	}
	var out []placedError
	for _, e := range list {
		out = append(out, placedError{Source: e.Source, Line: e.Line, Rule: e.Rule, Field: e.Field, Message: e.Message})
	}
	return out
}

func TestLoadDocumentsAccepts(t *testing.T) {
	tests := []struct {
		name      string
		docs      []Document
		wantRules []string
		wantFrom  []string
	}{
		{
			name:      "a file of two YAML documents loads both",
			docs:      []Document{{Source: "all.yaml", Data: []byte(docRule("a", "a") + "---\n" + docRule("b", "b"))}},
			wantRules: []string{"a", "b"},
			wantFrom:  []string{"all.yaml", "all.yaml"},
		},
		{
			name: "empty documents are skipped",
			docs: []Document{{Source: "all.yaml", Data: []byte("---\n# only a comment\n---\n" + docRule("a", "a") +
				"--- # the next one\n\n---\n" + docRule("b", "b") + "---\n")}},
			wantRules: []string{"a", "b"},
			wantFrom:  []string{"all.yaml", "all.yaml"},
		},
		{
			name: "three files, in the order given",
			docs: []Document{
				{Source: "dir/c.yaml", Data: []byte(docRule("c", "c"))},
				{Source: "dir/a.yaml", Data: []byte(docRule("a", "a"))},
				{Source: "configmap ns/rules key b.yaml", Data: []byte(docRule("b", "b"))},
			},
			wantRules: []string{"c", "a", "b"},
			wantFrom:  []string{"dir/c.yaml", "dir/a.yaml", "configmap ns/rules key b.yaml"},
		},
		{
			name:      "a --- inside a block scalar is text",
			docs:      []Document{{Source: "x.yaml", Data: []byte(docRule("a", "a") + "    status:\n      fields:\n        text: |\n          ---\n          more\n")}},
			wantRules: []string{"a"},
			wantFrom:  []string{"x.yaml"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := LoadDocuments(tt.docs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var names, from []string
			for _, r := range rs.Rules {
				names, from = append(names, r.Name), append(from, r.Source)
			}
			if diff := cmp.Diff(tt.wantRules, names); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantFrom, from); diff != "" {
				t.Errorf("rule sources (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadDocumentsErrors(t *testing.T) {
	tests := []struct {
		name string
		docs []Document
		want []placedError
		text string
	}{
		{
			name: "an error in the second YAML document has its line in the file",
			docs: []Document{{Source: "rules.yaml", Data: []byte(docRule("a", "a") + "---\n" + docRule("b", "${parent.metadata.name +}"))}},
			want: []placedError{{Source: "rules.yaml", Line: 23, Rule: "b", Field: "template.metadata.name", Message: "*"}},
		},
		{
			name: "a YAML syntax error in the second document",
			docs: []Document{{Source: "rules.yaml", Data: []byte(docRule("a", "a") + "\n---\n\napiVersion: [\n")}},
			want: []placedError{{Source: "rules.yaml", Line: 15, Message: "invalid YAML: did not find expected node content"}},
		},
		{
			name: "the same rule name in two files: an error at each place, naming the other",
			docs: []Document{
				{Source: "dir/a.yaml", Data: []byte(docRule("web", "a"))},
				{Source: "dir/b.yaml", Data: []byte("# team b\n" + docRule("web", "b"))},
			},
			want: []placedError{
				{Source: "dir/a.yaml", Line: 4, Rule: "web", Field: "name",
					Message: "duplicate rule name (also at dir/b.yaml:5); rule names must be unique across all rules files and ConfigMaps: rename one"},
				{Source: "dir/b.yaml", Line: 5, Rule: "web", Field: "name",
					Message: "duplicate rule name (also at dir/a.yaml:4); rule names must be unique across all rules files and ConfigMaps: rename one"},
			},
			text: `dir/a.yaml:4: rule "web": name: duplicate rule name (also at dir/b.yaml:5); rule names must be unique across all rules files and ConfigMaps: rename one
dir/b.yaml:5: rule "web": name: duplicate rule name (also at dir/a.yaml:4); rule names must be unique across all rules files and ConfigMaps: rename one`,
		},
		{
			name: "the same rule name in two documents of one file: one error, at the second",
			docs: []Document{{Source: "all.yaml", Data: []byte(docRule("web", "a") + "---\n" + docRule("web", "b"))}},
			want: []placedError{{Source: "all.yaml", Line: 16, Rule: "web", Field: "name",
				Message: "duplicate rule name (also at all.yaml:4); rule names must be unique across all rules files and ConfigMaps: rename one"}},
		},
		{
			name: "errors are ordered by document, then line (none first)",
			docs: []Document{
				{Source: "z.yaml", Data: []byte(docRule("z", "z") + "    maxChildren: 0\n")},
				{Source: "a.yaml", Data: []byte("apiVersion: v1\n")},
			},
			want: []placedError{
				{Source: "z.yaml", Line: 12, Rule: "z", Field: "maxChildren", Message: "must be a positive integer, not 0"},
				{Source: "a.yaml", Field: "kind", Message: "required"},
				{Source: "a.yaml", Line: 1, Field: "apiVersion", Message: `unsupported apiVersion "v1"; use kubecel.dev/v1alpha1`},
			},
		},
		{
			name: "a file with only empty documents is empty",
			docs: []Document{{Source: "a.yaml", Data: []byte(docRule("a", "a"))}, {Source: "empty.yaml", Data: []byte("---\n# nothing\n---\n")}},
			want: []placedError{{Source: "empty.yaml", Message: "the rules file is empty; it needs apiVersion: kubecel.dev/v1alpha1, kind: RuleSet and rules"}},
			text: "empty.yaml: the rules file is empty; it needs apiVersion: kubecel.dev/v1alpha1, kind: RuleSet and rules",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadDocuments(tt.docs, Options{})
			if err == nil {
				t.Fatal("loaded")
			}
			got := placedErrors(t, err)
			for i := range got {
				if i < len(tt.want) && tt.want[i].Message == "*" && got[i].Message != "" {
					got[i].Message = "*"
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s\n%v", diff, err)
			}
			if tt.text != "" && err.Error() != tt.text {
				t.Errorf("error text:\n%s\nwant:\n%s", err, tt.text)
			}
		})
	}
}

func TestLoadDocumentsWarningsArePlaced(t *testing.T) {
	// The child's kind has no schema, so a YAML 1.1 boolean is a warning, not a type error.
	settings := strings.ReplaceAll(docRule("b", "b"), "apiVersion: v1\n          kind: ConfigMap", "apiVersion: example.com/v1\n          kind: Settings")
	data := docRule("a", "a") + "---\n" + settings + "          spec: {enabled: yes}\n"
	rs, err := LoadDocuments([]Document{{Source: "all.yaml", Data: []byte(data)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []placedError
	for _, w := range rs.Warnings {
		got = append(got, placedError{Source: w.Source, Line: w.Line, Rule: w.Rule, Field: w.Field})
	}
	want := []placedError{{Source: "all.yaml", Line: 24, Rule: "b", Field: "template.spec.enabled"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestDocumentsHash(t *testing.T) {
	one := []byte(docRule("a", "a"))
	sum := sha256.Sum256(one)
	rs, err := Load(one, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rs.Hash != hex.EncodeToString(sum[:]) {
		t.Errorf("hash of one file %s, want its sha256", rs.Hash)
	}
	two := []Document{{Source: "a.yaml", Data: one}, {Source: "b.yaml", Data: []byte(docRule("b", "b"))}}
	renamed := []Document{{Source: "c.yaml", Data: one}, {Source: "b.yaml", Data: []byte(docRule("b", "b"))}}
	if documentsHash(two) == documentsHash(renamed) {
		t.Error("moving a document to another source kept the hash")
	}
}
