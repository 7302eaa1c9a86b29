package docstest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// block is one fenced code block of a document.
type block struct {
	file  string // relative to the repository root
	line  int    // of the opening fence
	lang  string
	lines []string
}

// step is one command of a block and the output the block shows for it.
type step struct {
	line     int // in the document
	command  string
	want     []string // nil: not compared
	wantCode int
	// devDir is set for a `kubecel dev --dir DIR` line: it is not run as a command but
	// started in the background for the commands that name DIR/.
	devDir string
	// copyTo is set for a `cp FROM TO` line of a shell block: the file it writes, which
	// must be in a kubecel dev's DIR (an edit of the rules it runs, or a copy kept).
	copyTo string
	// all marks a line of a ```sh run block: any command, run with the release
	// environment (docEnv.releaseEnv).
	all bool
}

// runAll is the fence of a shell block whose every line runs (see TestDocs).
const runAll = "sh run"

// devLine matches a kubecel dev command line and its --dir.
var devLine = regexp.MustCompile(`^(bin/)?kubecel dev\s(?:.*\s)?--dir[= ](\S+)`)

var kubecelCommand = regexp.MustCompile(`(^|\|\s*)(bin/)?kubecel\s`)

// copyLine matches a `cp FROM TO` line, with an optional comment.
var copyLine = regexp.MustCompile(`^(cp\s+\S+\s+(\S+))\s*(#.*)?$`)

// blocks returns the fenced code blocks of a document.
func blocks(t *testing.T, root, doc string) []block {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	var cur *block
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fence := strings.HasPrefix(strings.TrimSpace(line), "```")
		switch {
		case fence && cur == nil:
			cur = &block{file: doc, line: n, lang: strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "```"))}
		case fence:
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Errorf("%s:%d: the code block is not closed", doc, cur.line)
	}
	return out
}

// parseBlock returns the kubecel commands of a shell block and their shown output.
func parseBlock(b block) ([]step, error) {
	switch b.lang {
	case runAll:
		var steps []step
		for i, l := range b.lines {
			command := strings.TrimSpace(l)
			if command == "" || strings.HasPrefix(command, "#") {
				continue
			}
			if strings.HasSuffix(command, "\\") {
				return nil, fmt.Errorf("line %d: a command of a %q block is one line (no \\ continuation)", b.line+1+i, runAll)
			}
			steps = append(steps, step{line: b.line + 1 + i, command: command, all: true})
		}
		return steps, nil
	case "sh", "shell", "bash":
		var steps []step
		for i, l := range b.lines {
			command := strings.TrimPrefix(strings.TrimSpace(l), "$ ")
			if m := copyLine.FindStringSubmatch(command); m != nil {
				steps = append(steps, step{line: b.line + 1 + i, command: m[1], copyTo: m[2]})
				continue
			}
			if !kubecelCommand.MatchString(command) {
				continue
			}
			st := step{line: b.line + 1 + i, command: strings.TrimSpace(l)}
			if m := devLine.FindStringSubmatch(command); m != nil {
				st.command, _, _ = strings.Cut(command, " #")
				st.devDir = m[2]
			}
			steps = append(steps, st)
		}
		return steps, nil
	case "diff":
		return diffStep(b)
	case "console":
	default:
		return nil, nil
	}
	var steps []step
	for i, l := range b.lines {
		cmd, isCmd := strings.CutPrefix(l, "$ ")
		switch {
		case isCmd && cmd == "echo $?":
			if len(steps) == 0 {
				return nil, errors.New("echo $? with no command before it")
			}
			if i+1 == len(b.lines) {
				return nil, errors.New("echo $? must be followed by the exit code")
			}
			code, err := strconv.Atoi(strings.TrimSpace(b.lines[i+1]))
			if err != nil {
				return nil, fmt.Errorf("echo $? must be followed by the exit code: %v", err)
			}
			steps[len(steps)-1].wantCode = code
			steps = append(steps, step{}) // collects the code line, dropped below
		case isCmd:
			if !kubecelCommand.MatchString(cmd) {
				return nil, fmt.Errorf("line %d: a console block shows only kubecel commands (and echo $?), not %q", b.line+1+i, cmd)
			}
			steps = append(steps, step{line: b.line + 1 + i, command: cmd, want: []string{}})
		case len(steps) == 0:
			return nil, fmt.Errorf("line %d: output before the first $ command", b.line+1+i)
		default:
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, l)
		}
	}
	var out []step
	for _, s := range steps {
		if s.command != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// diffStep checks a diff block, which starts with `--- FROM` and `+++ TO` (files of the
// repository, or bin/dev/rules.yaml of kubecel dev): its hunks must be what `diff -u
// FROM TO` prints. A diff block without those two lines and a hunk is an error: it
// could not be checked.
func diffStep(b block) ([]step, error) {
	var from, to string
	okFrom, okTo := false, false
	if len(b.lines) >= 3 {
		from, okFrom = strings.CutPrefix(b.lines[0], "--- ")
		to, okTo = strings.CutPrefix(b.lines[1], "+++ ")
	}
	if !okFrom || !okTo {
		return nil, errors.New("a diff block starts with `--- FROM` and `+++ TO`, the files it compares, and shows what `diff -u FROM TO` prints")
	}
	// diff exits 1 when the files differ; tail drops its header (names and times).
	command := fmt.Sprintf("diff -u %s %s | tail -n +3", from, to)
	return []step{{line: b.line + 1, command: command, want: b.lines[2:]}}, nil
}

var (
	uuid = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	// proof is a child's kubecel.dev/proof annotation as YAML or a plan's field diff
	// shows it: its value depends on the installation's key.
	proof = regexp.MustCompile(`(kubecel\.dev/proof(?:"\])?: "?)[A-Za-z0-9_-]{22}\b`)
)

func normalise(s string) string {
	return proof.ReplaceAllString(uuid.ReplaceAllString(s, "<uid>"), "${1}<proof>")
}

// matchLines reports whether got matches want, where a want line that is only ...
// matches any number of lines. When it does not, wi and gi are the lines of want and got
// where the match that went furthest in want failed.
func matchLines(want, got []string) (ok bool, wi, gi int) {
	var m matcher
	return m.match(want, got, 0, 0), m.wi, m.gi
}

// matcher keeps the first failure at the furthest line of want.
type matcher struct {
	wi, gi int
	failed bool
}

func (m *matcher) match(want, got []string, wi, gi int) bool {
	switch {
	case wi == len(want):
		if gi == len(got) {
			return true
		}
	case strings.TrimSpace(want[wi]) == "...":
		for i := gi; i <= len(got); i++ {
			if m.match(want, got, wi+1, i) {
				return true
			}
		}
		return false
	case gi < len(got) && want[wi] == got[gi]:
		return m.match(want, got, wi+1, gi+1)
	}
	if !m.failed || wi > m.wi {
		m.wi, m.gi, m.failed = wi, gi, true
	}
	return false
}
