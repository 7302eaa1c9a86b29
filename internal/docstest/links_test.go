package docstest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	heading  = regexp.MustCompile(`^(#{1,6}) (.+)$`)
	link     = regexp.MustCompile(`\]\(([^)\s]*)\)`)
	tocEntry = regexp.MustCompile(`^- \[[^\]]+\]\(#([^)]+)\)$`)
)

// TestDocsLinks checks the links between the documents (README.md, docs/*.md): every
// #anchor names a heading of its document, every linked file exists, and a document
// with a table of contents (a list of #anchor links before its first section) lists
// every section (## heading) in it.
func TestDocsLinks(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	docs := documents(t, root)
	anchors := map[string]map[string]bool{}
	sections := map[string][]string{}
	toc := map[string][]string{}
	for _, doc := range docs {
		anchors[doc] = map[string]bool{}
		inFence, seenSection := false, false
		for _, l := range readLines(t, filepath.Join(root, doc)) {
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				inFence = !inFence
			}
			if inFence {
				continue
			}
			if m := heading.FindStringSubmatch(l); m != nil {
				anchors[doc][anchor(m[2])] = true
				if m[1] == "##" {
					seenSection = true
					sections[doc] = append(sections[doc], anchor(m[2]))
				}
			} else if m := tocEntry.FindStringSubmatch(l); m != nil && !seenSection {
				toc[doc] = append(toc[doc], m[1])
			}
		}
	}
	for _, doc := range docs {
		if len(toc[doc]) > 0 {
			for _, s := range sections[doc] {
				if !contains(toc[doc], s) {
					t.Errorf("%s: the table of contents lacks the section #%s", doc, s)
				}
			}
		}
		inFence := false
		for i, l := range readLines(t, filepath.Join(root, doc)) {
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				inFence = !inFence
			}
			if inFence {
				continue
			}
			for _, m := range link.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				path := doc
				if file != "" {
					path = filepath.Join(filepath.Dir(doc), file)
					if _, err := os.Stat(filepath.Join(root, path)); err != nil {
						t.Errorf("%s:%d: link to %s: %v", doc, i+1, target, err)
						continue
					}
				}
				if frag == "" {
					continue
				}
				if a, ok := anchors[path]; ok && !a[frag] {
					t.Errorf("%s:%d: link to %s: %s has no heading #%s", doc, i+1, target, path, frag)
				}
			}
		}
	}
}

// anchor is the fragment GitHub gives a heading: lowercase, punctuation dropped,
// spaces as hyphens.
func anchor(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(data), "\n")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
