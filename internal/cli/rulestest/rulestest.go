package rulestest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

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

// Options are kubecel test's flags.
type Options struct {
	// Match is --run: only the tests whose name matches this regular expression run.
	Match string
	// Verbose lists every test that runs, passed or failed.
	Verbose bool
	// Update rewrites the expected children and status of the tests that run.
	Update bool
}

// Run runs the tests of the test files under paths (the current directory when none is
// given) and reports on s.Out in the manner of go test.
func Run(ctx context.Context, o *Options, paths []string, s clikit.Streams) error {
	var filter *regexp.Regexp
	if o.Match != "" {
		var err error
		if filter, err = regexp.Compile(o.Match); err != nil {
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
	w := s.Out
	code := 0
	for _, file := range files {
		c := o.runFile(ctx, w, file, filter)
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
func (o *Options) runFile(ctx context.Context, w io.Writer, file string, filter *regexp.Regexp) int {
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
		outcome, msgs := renderTest(ctx, s, c)
		if c.wantError != "" {
			outcome, msgs = nil, checkError(c.wantError, msgs)
		}
		if outcome != nil {
			msgs = checkTest(ctx, c, outcome, o.Update)
			if o.Update {
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
		} else if o.Verbose {
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
