package docstest

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/rules"
)

// quoted is the marker of a block that quotes a file, which cmd/kubecel's
// TestDocsExamples compares with the file.
var quoted = regexp.MustCompile(`^<!-- example: \S+ -->$`)

// TestDocsYAML checks the ```yaml blocks of the documents that do not quote a file (those
// are compared with it by cmd/kubecel's TestDocsExamples): each is YAML, and one that is
// a whole rules file (kind: RuleSet, its rules a list of rules) loads as kubecel check loads it,
// without CRDs: fields, expressions and dependencies.
func TestDocsYAML(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, doc := range documents(t, root) {
		lines := readLines(t, filepath.Join(root, doc))
		for _, b := range blocks(t, root, doc) {
			if b.lang != "yaml" || b.line >= 2 && quoted.MatchString(strings.TrimSpace(lines[b.line-2])) {
				continue
			}
			checked++
			text := strings.Join(b.lines, "\n") + "\n"
			var v any
			if err := yaml.Unmarshal([]byte(text), &v); err != nil {
				t.Errorf("%s:%d: the yaml block is not YAML: %v", doc, b.line, err)
				continue
			}
			if !rulesFile(v) {
				continue
			}
			if _, err := rules.Load([]byte(text), rules.Options{}); err != nil {
				t.Errorf("%s:%d: the rules of the yaml block do not load:\n%v", doc, b.line, err)
			}
		}
	}
	if checked == 0 {
		t.Error("no yaml block checked")
	}
}

// rulesFile reports whether a document is a whole rules file: a RuleSet whose rules are
// maps (not a synopsis such as `rules: [...]`).
func rulesFile(v any) bool {
	m, _ := v.(map[string]any)
	list, _ := m["rules"].([]any)
	if m["kind"] != "RuleSet" || len(list) == 0 {
		return false
	}
	for _, r := range list {
		if _, ok := r.(map[string]any); !ok {
			return false
		}
	}
	return true
}
