package docstest

import (
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocsFiles fails for a file under docs/ that no documented command reads: such a
// file is shown to readers but checked by nothing (see TestDocs for the exceptions). A
// file that is an edit of another (named *-edited.*) must also be the +++ side of a
// checked diff block, which compares it with what it was derived from: a command that
// reads it shows only part of its output (plan's changes, ...), so it could fall behind
// its source unnoticed.
func TestDocsFiles(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var commands []string
	diffed := map[string]bool{} // the +++ files of checked diff blocks
	for _, doc := range documents(t, root) {
		for _, b := range blocks(t, root, doc) {
			steps, err := parseBlock(b)
			if err != nil {
				t.Fatalf("%s:%d: %v", b.file, b.line, err)
			}
			for _, s := range steps {
				commands = append(commands, s.command)
				if m := diffCommand.FindStringSubmatch(s.command); m != nil && b.lang == "diff" {
					diffed[m[2]] = true
				}
			}
		}
	}
	err = filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".md") {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if strings.HasPrefix(rel, "docs/examples/") || strings.HasPrefix(rel, "docs/cli/") {
			return nil
		}
		if derived(rel) && !diffed[rel] {
			t.Errorf("%s: an edit of another file, but no checked diff block (--- FROM, +++ %s) shows it against what it was derived from, so it can fall behind it", rel, rel)
		}
		for _, c := range commands {
			if readsFile(c, rel) {
				return nil
			}
		}
		t.Errorf("%s: no command in a document's shell or console block, nor a checked diff block, reads it", rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// diffCommand is the command of a checked diff block (diffStep).
var diffCommand = regexp.MustCompile(`^diff -u (\S+) (\S+) \| tail -n \+3$`)

// derived reports whether a file under docs/ is an edit of another: its name ends in
// -edited (rules-edited.yaml).
func derived(file string) bool {
	base := filepath.Base(file)
	return strings.HasSuffix(strings.TrimSuffix(base, filepath.Ext(base)), "-edited")
}

// readsFile reports whether a command names the file, or a directory that holds it as
// a whole argument (--crds docs/own-crd).
func readsFile(command, file string) bool {
	if strings.Contains(command, file) {
		return true
	}
	args := strings.Fields(command)
	for dir := filepath.Dir(file); dir != "." && dir != "docs"; dir = filepath.Dir(dir) {
		if slices.Contains(args, dir) || slices.Contains(args, dir+"/") {
			return true
		}
	}
	return false
}
