package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra/doc"
)

// cliDocsDir holds the command reference: one Markdown page per command, generated from
// the commands themselves (their use lines, help and flags) by cobra's doc generator.
const cliDocsDir = "../../docs/cli"

// TestCLIReference regenerates the command reference into a temporary directory and
// compares it with docs/cli, so that the reference cannot fall behind the commands.
// `go test ./cmd/kubecel -run TestCLIReference -update` (make docs) rewrites docs/cli.
func TestCLIReference(t *testing.T) {
	dir := t.TempDir()
	if err := writeCLIReference(dir); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.RemoveAll(cliDocsDir); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(cliDocsDir, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
	}
	want := readPages(t, dir)
	got := readPages(t, cliDocsDir)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/cli differs from the commands (-generated +docs/cli); run make docs:\n%s", diff)
	}
}

// writeCLIReference writes the reference of every command, completion and help
// included, as a user's kubecel has them.
func writeCLIReference(dir string) error {
	root := newRootCommand()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.DisableAutoGenTag = true // no generation date: the pages change only with the commands
	return doc.GenMarkdownTree(root, dir)
}

// readPages reads the Markdown pages of a directory by name.
func readPages(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	pages := map[string]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		pages[e.Name()] = string(data)
	}
	return pages
}
