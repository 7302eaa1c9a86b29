package docstest

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDocsFiles fails for a file under docs/ that no documented command reads: such a
// file is shown to readers but checked by nothing (see TestDocs for the exceptions).
func TestDocsFiles(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var commands []string
	for _, doc := range documents(t, root) {
		for _, b := range blocks(t, root, doc) {
			steps, err := parseBlock(b)
			if err != nil {
				t.Fatalf("%s:%d: %v", b.file, b.line, err)
			}
			for _, s := range steps {
				commands = append(commands, s.command)
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
