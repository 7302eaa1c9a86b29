package docstest

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runbook is an alert's runbook annotation: a section of a document.
var runbook = regexp.MustCompile(`^\s+runbook: (docs/[a-z-]+\.md)#(\S+)$`)

// TestRunbooks checks that every alert of deploy/monitoring names, as its runbook, a
// heading of a document.
func TestRunbooks(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, l := range readLines(t, filepath.Join(root, "deploy/monitoring/prometheusrule.yaml")) {
		if !strings.Contains(l, "runbook:") {
			continue
		}
		m := runbook.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("prometheusrule.yaml:%d: %q is not docs/NAME.md#SECTION", i+1, strings.TrimSpace(l))
			continue
		}
		n++
		if !headings(t, filepath.Join(root, m[1]))[m[2]] {
			t.Errorf("prometheusrule.yaml:%d: %s has no heading #%s", i+1, m[1], m[2])
		}
	}
	if n == 0 {
		t.Error("prometheusrule.yaml has no runbook")
	}
}

// headings returns the anchors of the headings of a document, outside code blocks.
func headings(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	inFence := false
	for _, l := range readLines(t, path) {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
		}
		if m := heading.FindStringSubmatch(l); m != nil && !inFence {
			out[anchor(m[2])] = true
		}
	}
	return out
}
