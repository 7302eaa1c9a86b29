package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubecel/kubecel/internal/cli/clikit"
)

// This file holds kubecel test: it finds the test files, runs their tests and reports
// in the manner of go test.

// Exit codes of kubecel test: 1 for a test that failed and for a test file, its rules or
// its objects that do not load, as go test exits 1 for a package that does not build.
const (
	testExitFailed  = 1
	testExitNoLoad  = 1
	testIndentation = "    "
)

type testOptions struct {
	run     string
	verbose bool
	update  bool
}

func newTestCommand() *cobra.Command {
	var o testOptions
	cmd := &cobra.Command{
		Use:   "test [PATH]... [--run REGEXP] [--verbose] [--update]",
		Short: "Run the tests of rules files (test files *_test.yaml), offline",
		Long: `test runs rules tests without a cluster. A test file (kind: RuleTest) names its rules
and holds tests: each gives a parent, the objects observed in the cluster (children as
they exist, objects that refs read) and what the rules must compute: the children, the
status, readiness and CEL assertions, or the error the evaluation must fail with. Each
test renders its parent as kubecel render does and compares.

A PATH that is a file is a test file, whatever its name; a directory stands for every
file named *_test.yaml below it (directories starting with . are skipped). Without a
PATH, the current directory.

For each failing test, test prints --- FAIL: FILE/NAME and each difference: a diff of a
child or of the status (-want +got), a missing or unexpected child, a false assertion
with the value of each side of a comparison. Then one line per file: ok or FAIL, and a
last line FAIL when a test failed. --verbose lists the tests that pass; --run runs only
the tests whose name matches the regular expression. --update writes the children and
status the rules compute into the expect blocks of the tests that run, or the files
their expect.children name (readiness and assertions are still checked), keeping the
comments of the test file; the file is written again by a YAML encoder, which may change
its indentation and quoting.

Exit status 0 when every test passes; 1 when a test fails, when a test file, its rules
or the objects it names do not load, or when no test file is found.`,
		Example: `  # every test file (*_test.yaml) under a directory
  kubecel test examples/

  # the tests of one file whose name matches, each listed
  kubecel test examples/webapp/webapp_test.yaml --run shop --verbose

  # write what the rules compute into the tests' expectations
  kubecel test examples/webapp/webapp_test.yaml --update`,
		RunE: func(cmd *cobra.Command, args []string) error { return o.runTests(cmd, args) },
	}
	cmd.Flags().StringVar(&o.run, "run", "", "run only the tests whose name matches this regular expression")
	cmd.Flags().BoolVar(&o.verbose, "verbose", false, "list every test that runs, passed or failed")
	cmd.Flags().BoolVar(&o.update, "update", false, "rewrite the expected children and status of the tests that run with what the rules compute")
	return cmd
}

func (o *testOptions) runTests(cmd *cobra.Command, paths []string) error {
	var filter *regexp.Regexp
	if o.run != "" {
		var err error
		if filter, err = regexp.Compile(o.run); err != nil {
			return &clikit.ExitError{Code: testExitNoLoad, Err: fmt.Errorf("--run: %w", err)}
		}
	}
	if len(paths) == 0 {
		paths = []string{"."}
	}
	files, err := findTestFiles(paths)
	if err != nil {
		return &clikit.ExitError{Code: testExitNoLoad, Err: err}
	}
	w := cmd.OutOrStdout()
	code := 0
	for _, file := range files {
		c := o.runFile(cmd, w, file, filter)
		code = max(code, c)
	}
	if code != 0 {
		fmt.Fprintln(w, "FAIL")
		return &clikit.ExitError{Code: code}
	}
	return nil
}

// runFile runs the tests of one file and prints their results; it returns the exit
// code that the file calls for.
func (o *testOptions) runFile(cmd *cobra.Command, w io.Writer, file string, filter *regexp.Regexp) int {
	s, err := loadTestFile(file)
	if err != nil {
		fmt.Fprintf(w, "%s:\n", file)
		printIndented(w, err.Error())
		fmt.Fprintf(w, "FAIL %s [load failed]\n", file)
		return testExitNoLoad
	}
	ran, failed := 0, 0
	var updates []testUpdate
	for _, c := range s.tests {
		if filter != nil && !filter.MatchString(c.name) {
			continue
		}
		ran++
		name := file + "/" + c.name
		outcome, msgs := renderTest(cmd.Context(), s, c)
		if c.wantError != "" {
			outcome, msgs = nil, checkError(c.wantError, msgs)
		}
		if outcome != nil {
			msgs = checkTest(cmd.Context(), c, outcome, o.update)
			if o.update {
				if u, changed := updateOf(c, outcome); changed {
					updates = append(updates, u)
					fmt.Fprintf(w, "--- UPDATE: %s\n", name)
				}
			}
		}
		if len(msgs) > 0 {
			failed++
			fmt.Fprintf(w, "--- FAIL: %s\n", name)
			for _, m := range msgs {
				printIndented(w, m)
			}
			if outcome != nil {
				for _, n := range outcome.notes {
					printIndented(w, "note: "+n)
				}
			}
		} else if o.verbose {
			fmt.Fprintf(w, "--- PASS: %s\n", name)
		}
	}
	if len(updates) > 0 {
		if err := rewriteTestFile(file, updates); err != nil {
			fmt.Fprintf(w, "%s:\n", file)
			printIndented(w, err.Error())
			fmt.Fprintf(w, "FAIL %s [update failed]\n", file)
			return testExitNoLoad
		}
	}
	switch {
	case ran == 0:
		fmt.Fprintf(w, "ok   %s [no tests to run]\n", file)
	case failed > 0:
		fmt.Fprintf(w, "FAIL %s  %d of %s failed\n", file, failed, fmt.Sprintf("%d %s", ran, clikit.Plural(ran, "test", "tests")))
		return testExitFailed
	default:
		fmt.Fprintf(w, "ok   %s  %s\n", file, fmt.Sprintf("%d %s", ran, clikit.Plural(ran, "test", "tests")))
	}
	return 0
}

// printIndented prints each line of text indented under a test.
func printIndented(w io.Writer, text string) {
	for _, line := range strings.Split(text, "\n") {
		fmt.Fprintln(w, strings.TrimRight(testIndentation+line, " "))
	}
}

// findTestFiles returns the test files of the paths: a file as given, a directory's
// *_test.yaml files below it (sorted), each file once.
func findTestFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != p && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), testFileSuffix) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("no test file (*%s) in %s", testFileSuffix, p)
		}
		files = append(files, found...)
	}
	slices.Sort(files)
	files = slices.Compact(files)
	if len(files) == 0 {
		return nil, errors.New("no test file")
	}
	return files, nil
}
