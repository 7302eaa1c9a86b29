package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/kubecel/kubecel/internal/cli/clikit"
)

var update = flag.Bool("update", false, "rewrite the golden files of the render and check tests")

// runCommand runs a command in process and returns what it printed and its exit code.
func runCommand(t *testing.T, cmd *cobra.Command, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	err := cmd.ExecuteContext(t.Context())
	switch ee := (*clikit.ExitError)(nil); {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.Code
		if ee.Err != nil {
			fmt.Fprintf(&errOut, "Error: %v\n", ee.Err)
		}
	default:
		code = 1
		fmt.Fprintf(&errOut, "Error: %v\n", err)
	}
	return out.String(), errOut.String(), code
}

// runRoot runs the kubecel command line in process, as a user types it.
func runRoot(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runRootIn(t, "", args...)
}

// runRootIn is runRoot with stdin as the standard input.
func runRootIn(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := newRootCommand()
	cmd.SetIn(strings.NewReader(stdin))
	return runCommand(t, cmd, args...)
}

// golden compares got with the file, or rewrites the file with -update.
func golden(t *testing.T, file, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("output differs from %s (-want +got; go test -update rewrites it):\n%s", file, diff)
	}
}

func transcript(stdout, stderr string, code int) string {
	return fmt.Sprintf("## stdout\n%s## stderr\n%s## exit %d\n", stdout, stderr, code)
}

func TestRender(t *testing.T) {
	const dir = "testdata/render"
	crds := "../../rules/testdata/crds"
	tests := []struct {
		name  string
		args  []string
		stdin string // a file given as the standard input
		code  int
	}{
		{name: "nothing-observed", args: []string{"--rules", dir + "/rules.yaml", "-f", dir + "/parent.yaml"}},
		{name: "observed", args: []string{"--rules", dir + "/rules.yaml", "-f", dir + "/parent.yaml", "-f", dir + "/observed.yaml", "--crds", crds}},
		{name: "json", args: []string{"--rules", dir + "/rules.yaml", "-f", dir + "/parent.yaml", "-f", dir + "/observed.yaml", "-o", "json"}},
		{name: "when-false", args: []string{"--rules", dir + "/rules.yaml", "-f", dir + "/no-image.yaml"}},
		{name: "not-selected", args: []string{"--rules", dir + "/rules.yaml", "-f", dir + "/other-parent.yaml"}, code: 1},
		{name: "no-rule", args: []string{"--rules", dir + "/rules.yaml", "-f", dir + "/database.yaml"}, code: 1},
		{name: "secret-redacted-and-error", args: []string{"--rules", dir + "/secret-rules.yaml", "-f", dir + "/database.yaml"}, code: 1},
		{name: "rules-do-not-load", args: []string{"--rules", dir + "/parent.yaml", "-f", dir + "/parent.yaml"}, code: 1},
		{name: "over-max-children", args: []string{"--rules", dir + "/rules.yaml", "-f", dir + "/parent.yaml", "--max-children", "2"}, code: 1},
		{name: "bad-output", args: []string{"--rules", dir + "/rules.yaml", "-f", dir + "/parent.yaml", "-o", "xml"}, code: 1},
		// A file of several parents renders each, with the observed objects labelled
		// for it (the gallery's README commands).
		{name: "several-parents", args: []string{"--rules", "../../examples/webapp/rules.yaml", "-f", "../../examples/webapp/parents.yaml",
			"-f", "../../examples/webapp/observed.yaml", "--crds", "../../examples/webapp"}},
		// With --crds, a parent is admitted as the API server would create it: one
		// that misses a required field is an error of that parent (not a hint to read
		// the field with ? and orValue), and the CRD's defaults fill the other.
		{name: "invalid-parent", args: []string{"--rules", "../../examples/webapp/rules.yaml", "-f", dir + "/invalid-parents.yaml",
			"--crds", "../../examples/webapp"}, code: 1},
		// - is the standard input, for the rules or for one -f.
		{name: "stdin-parents", args: []string{"--rules", dir + "/rules.yaml", "-f", "-", "-f", dir + "/observed.yaml", "--crds", crds}, stdin: dir + "/parent.yaml"},
		{name: "stdin-rules", args: []string{"--rules", "-", "-f", dir + "/parent.yaml"}, stdin: dir + "/rules.yaml"},
		{name: "stdin-rules-do-not-load", args: []string{"--rules", "-", "-f", dir + "/parent.yaml"}, stdin: dir + "/parent.yaml", code: 1},
		{name: "stdin-no-parent", args: []string{"--rules", dir + "/rules.yaml", "-f", "-"}, code: 1},
		{name: "stdin-twice", args: []string{"--rules", "-", "-f", "-"}, stdin: dir + "/rules.yaml", code: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := newRenderCommand()
			if tt.stdin != "" {
				data, err := os.ReadFile(tt.stdin)
				if err != nil {
					t.Fatal(err)
				}
				cmd.SetIn(strings.NewReader(string(data)))
			} else {
				cmd.SetIn(strings.NewReader(""))
			}
			stdout, stderr, code := runCommand(t, cmd, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tt.code, stderr)
			}
			golden(t, filepath.Join(dir, "golden", tt.name+".txt"), transcript(stdout, stderr, code))
		})
	}
}

// TestDocsExamples renders every example of docs/rules.md and compares it with the
// output shown there, so that the documentation cannot rot. Each example directory
// holds rules.yaml, parent.yaml, optionally observed.yaml and crds/, and output.yaml.
func TestDocsExamples(t *testing.T) {
	dirs, err := filepath.Glob("../../docs/examples/*")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no examples under docs/examples")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			args := []string{"--rules", filepath.Join(dir, "rules.yaml"), "-f", filepath.Join(dir, "parent.yaml")}
			if _, err := os.Stat(filepath.Join(dir, "observed.yaml")); err == nil {
				args = append(args, "-f", filepath.Join(dir, "observed.yaml"))
			}
			if _, err := os.Stat(filepath.Join(dir, "crds")); err == nil {
				args = append(args, "--crds", filepath.Join(dir, "crds"))
			}
			stdout, stderr, code := runCommand(t, newRenderCommand(), args...)
			if code != 0 {
				t.Fatalf("render exited %d:\n%s", code, stderr)
			}
			golden(t, filepath.Join(dir, "output.yaml"), stdout)
		})
	}
}

// TestRulesReferenceQuotesTheExamples checks that every file docs/rules.md and
// docs/testing.md quote (a code block after <!-- example: PATH -->, PATH relative to
// docs/) is quoted exactly, so that the reference shows what the tested examples do; all
// but the file's first line that names the schema for editors (its path is relative to
// the file, and rules.md says how to write it).
func TestRulesReferenceQuotesTheExamples(t *testing.T) {
	for _, name := range []string{"rules.md", "testing.md"} {
		doc, err := os.ReadFile(filepath.Join("../../docs", name))
		if err != nil {
			t.Fatal(err)
		}
		blocks := regexp.MustCompile("(?s)<!-- example: (\\S+) -->\n```[a-z]*\n(.*?)```").FindAllSubmatch(doc, -1)
		if len(blocks) == 0 {
			t.Fatalf("docs/%s quotes no example", name)
		}
		for _, b := range blocks {
			file := filepath.Join("../../docs", string(b[1]))
			want, err := os.ReadFile(file)
			if err != nil {
				t.Errorf("docs/%s quotes %s: %v", name, b[1], err)
				continue
			}
			text, _ := strings.CutPrefix(string(want), "# yaml-language-server: $schema=")
			if len(text) < len(want) {
				_, text, _ = strings.Cut(text, "\n")
			}
			if diff := cmp.Diff(text, string(b[2])); diff != "" {
				t.Errorf("docs/%s quotes %s differently (-file +doc):\n%s", name, b[1], diff)
			}
		}
	}
}
