package docstest

// TestDocs runs every kubecel command shown in a fenced code block of README.md,
// CHANGELOG.md, docs/*.md and examples/**/README.md, and compares the output where the document shows
// it. The conventions:
//
//   - Shell blocks (```sh, ```console, ```shell, ```bash) are read line by line. A line
//     that runs kubecel (`kubecel ...`, `bin/kubecel ...`, after an optional `$ `, or
//     after a `|`) is a command and is run with sh from the root of a copy of the
//     repository, with the kubecel built from this tree first on $PATH and in bin/, no
//     $KUBECONFIG and an empty $HOME. Other lines (make, kubectl, comments) are not
//     kubecel commands and are not run.
//   - Blocks of any other language (```text, ```yaml, no language) are never run:
//     synopses such as `kubecel render --rules FILE -f PARENTS [-o yaml|json]` and sample
//     output without a command belong there (```yaml blocks are checked by TestDocsYAML).
//   - In a ```sh block a command must exit 0; its output is not compared.
//   - In a ```console block, the lines after a `$ ` command up to the next `$ ` line (or
//     the end of the block) are its expected output: stdout and stderr as one stream,
//     compared line by line. A line that is only `...` (indented or not) stands for any
//     number of lines, so a document can show an excerpt. The command must exit 0 unless
//     the next command is `$ echo $?`, whose expected output is the exit code.
//   - Before comparing, every UUID in both texts becomes <uid> (UIDs change each run),
//     and the value of every kubecel.dev/proof annotation <proof> (it depends on the
//     installation's key); nothing else is normalised.
//   - A ```diff block starts with `--- FROM` and `+++ TO` and is checked: its hunks must
//     be what `diff -u FROM TO` prints in the copy (a diff block without them is an
//     error). A file under docs/ derived from
//     another (docs/plan/rules-edited.yaml is the rules of `kubecel dev`, edited) is
//     shown this way, so it cannot fall behind what it was derived from.
//   - A command that names bin/dev/ runs against `kubecel dev --dir bin/dev` started in
//     the copy (the examples installed and the controller running, as with `make run`);
//     the test waits until the cluster matches bin/dev/rules.yaml (kubecel plan of them
//     exits 0) and dev says that its sample parents are Ready before it runs the first
//     such command.
//   - A `cp FROM TO` line of a shell block whose TO is in the DIR of a kubecel dev (an
//     edit of the rules it runs, saved as a user saves one, or a copy of them kept) is
//     run too. After one that writes DIR/rules.yaml, the test waits until the controller
//     has loaded it (dev's terminal shows one more `Loaded` line), and then until the
//     cluster matches it (kubecel plan of it exits 0) or a rollout of it is under way
//     (plan says a revision is Progressing), before it goes on.
//   - A `kubecel dev ... --dir DIR` line of a shell block (a document that runs its own
//     dev, such as with --no-examples and a CRD of its own) is not run where it stands:
//     it is started in the background, in the same way, before the first command that
//     names DIR/, and stopped when the test ends.
//
//   - A ```sh run block (the fence's info string is "sh run", which renders as sh) runs
//     every line, not only kubecel's: make release, helm, kubectl, crane, sha256sum...,
//     each a command on one line that must exit 0, for the pages that build, check and
//     push a release (docs/install.md). helm, kubectl and crane are the ones make tools
//     builds from pinned modules, on $PATH beside kubecel. The environment also has
//     $REGISTRY, a registry on localhost (go-containerregistry's, in memory) with a path
//     (127.0.0.1:PORT/platform), standing for the reader's registry; $KUBECONFIG, a local
//     control plane started for these blocks, standing for the reader's cluster (it runs
//     no nodes, so pods never start: what can run here is applying and dry runs);
//     $REVISION and $SOURCE_DATE_EPOCH, the repository's commit and its time, which make
//     release reads from git (the copy has no .git); and the Go caches and proxy of the
//     test's environment ($GOCACHE, $GOMODCACHE...), for make release's builds. Commands that need a real cluster's
//     nodes or other tools (kind load, waiting for a rollout) go in ```sh blocks, where
//     only kubecel lines run.
//
// TestDocsFiles checks that every file under docs/ other than the documents is read by
// a command that TestDocs runs (or a checked diff), except docs/examples/ (rendered and
// compared with their output.yaml by cmd/kubecel's TestDocsExamples) and docs/cli/
// (the command reference, compared with the commands by cmd/kubecel's TestCLIReference),
// and that a file edited from another (*-edited.*) is shown in a checked diff against it.
//
// TestDocsYAML checks that every ```yaml block that does not quote a file is YAML, and
// that one holding a whole rules file loads. Figures in prose that restate what an example or a test holds are checked against it
// by TestDocsFigures; the table of cached objects in docs/benchmarks.md against
// BenchmarkCachedObject by TestCachedObjectTable (cmd/bench's TestGoalsTable checks the
// goals table there against the run rows).
//
// Commands write only inside the copy (a redirect such as `> deploy/base/rules-rbac.yaml`
// changes the copy's file), never the repository.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
)

func TestDocs(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	docs := documents(t, root)
	env := newDocEnv(t, root)
	ran := 0
	for _, doc := range docs {
		for _, b := range blocks(t, root, doc) {
			steps, err := parseBlock(b)
			if err != nil {
				t.Errorf("%s:%d: %v", b.file, b.line, err)
				continue
			}
			for _, s := range steps {
				t.Run(fmt.Sprintf("%s:%d", b.file, s.line), func(t *testing.T) {
					env.run(t, s)
				})
				ran++
			}
		}
	}
	if ran == 0 {
		t.Fatal("no kubecel command found in the documents")
	}
	t.Logf("ran %d documented commands", ran)
}

// documents lists README.md, CHANGELOG.md, docs/*.md and examples/**/README.md.
func documents(t *testing.T, root string) []string {
	t.Helper()
	docs := []string{"README.md", "CHANGELOG.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range more {
		docs = append(docs, filepath.Join("docs", filepath.Base(m)))
	}
	err = filepath.WalkDir(filepath.Join(root, "examples"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "README.md" {
			rel, _ := filepath.Rel(root, path)
			docs = append(docs, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// docEnv is the copy of the repository the commands run in.
type docEnv struct {
	t                      *testing.T // TestDocs itself
	root, copy, home, path string
	// devs are the kubecel dev instances by --dir, started on first use; bin/dev is
	// there from the start, with the command of make run.
	devs map[string]*devInstance
	// release is the environment of ```sh run blocks, made on first use.
	release struct {
		once sync.Once
		env  []string
		err  error
	}
}

// devInstance is one kubecel dev of the documents.
type devInstance struct {
	command string
	once    sync.Once
	err     error
	out     *testenv.Buffer // what it prints
}

func newDocEnv(t *testing.T, root string) *docEnv {
	t.Helper()
	e := &docEnv{t: t, root: root, copy: t.TempDir(), home: t.TempDir(),
		devs: map[string]*devInstance{"bin/dev": {command: "kubecel dev --dir bin/dev"}}}
	if err := copyTree(root, e.copy); err != nil {
		t.Fatal(err)
	}
	binDir := filepath.Join(e.copy, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", testenv.BuildArgs(filepath.Join(binDir, "kubecel"), "./cmd/kubecel")...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	toolDir, err := controlplane.FindBinDir("", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		if err := os.Symlink(filepath.Join(toolDir, tool), filepath.Join(binDir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	e.path = binDir + string(os.PathListSeparator) + os.Getenv("PATH")
	return e
}

// copyTree copies the repository without .git and bin, keeping the files' times, so
// that make finds the copy's bin/ tools (links to the repository's) newer than their
// sources, as in the repository.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if rel == ".git" || rel == "bin" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil // bin is often a symlink
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return err
		}
		return os.Chtimes(dst, info.ModTime(), info.ModTime())
	})
}

// sh runs a command line in the copy, with env besides $PATH and $HOME, and returns its
// combined output and exit code.
func (e *docEnv) sh(ctx context.Context, command string, env ...string) (string, int, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir = e.copy
	cmd.Env = append([]string{"PATH=" + e.path, "HOME=" + e.home, testenv.RaceEnv}, env...)
	// A command cut by its timeout takes what it started with it (make release's go
	// builds), not only sh.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	testenv.CheckRaces(e.t, command, out.String())
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), ee.ExitCode(), nil
	}
	return out.String(), 0, err
}

func (e *docEnv) run(t *testing.T, s step) {
	if s.devDir != "" {
		if d := e.devs[s.devDir]; d != nil && d.command != s.command {
			t.Fatalf("two kubecel dev commands with --dir %s", s.devDir)
		}
		e.devs[s.devDir] = &devInstance{command: s.command}
		return
	}
	var copyInto *devInstance
	for dir, d := range e.devs {
		if strings.Contains(s.command, dir+"/") {
			d.once.Do(func() { d.out, d.err = e.startDev(d.command, dir) })
			if d.err != nil {
				t.Fatalf("%s: %v", d.command, d.err)
			}
		}
		if s.copyTo == dir+"/rules.yaml" {
			copyInto = d
		}
	}
	if s.copyTo != "" && !slices.ContainsFunc(slices.Collect(maps.Keys(e.devs)), func(dir string) bool { return strings.HasPrefix(s.copyTo, dir+"/") }) {
		t.Fatalf("%s: a cp line writes only into the --dir of a kubecel dev of the documents", s.command)
	}
	loaded := 0
	if copyInto != nil {
		loaded = len(loadedReport.FindAllString(copyInto.out.String(), -1))
	}
	timeout, env := 3*time.Minute, []string(nil)
	if s.all {
		var err error
		if env, err = e.releaseEnv(); err != nil {
			t.Fatalf("the environment of %q blocks: %v", runAll, err)
		}
		// make release builds kubecel for two platforms; a cold Go build cache takes
		// minutes per platform on two cores.
		timeout = 20 * time.Minute
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	got, code, err := e.sh(ctx, s.command, env...)
	if err != nil {
		t.Fatalf("%s: %v", s.command, err)
	}
	if code != s.wantCode {
		t.Errorf("%s: exit code %d, want %d; output:\n%s", s.command, code, s.wantCode, got)
	}
	if copyInto != nil {
		testenv.Eventually(t, time.Minute, func() (bool, string) {
			return len(loadedReport.FindAllString(copyInto.out.String(), -1)) > loaded,
				"kubecel dev has not loaded the rules again; it printed:\n" + copyInto.out.String()
		})
		dir := strings.TrimSuffix(s.copyTo, "/rules.yaml")
		testenv.Eventually(t, 2*time.Minute, func() (bool, string) {
			got, code, err := e.sh(ctx, fmt.Sprintf("kubecel plan --rules %[1]s/rules.yaml --kubeconfig %[1]s/kubeconfig", dir))
			if err != nil {
				t.Fatal(err)
			}
			return code == 0 || rolloutUnderWay.MatchString(got), fmt.Sprintf("kubecel plan exits %d:\n%s", code, got)
		})
	}
	if s.want == nil {
		return
	}
	gotLines := strings.Split(strings.TrimSuffix(normalise(got), "\n"), "\n")
	want := strings.Split(normalise(strings.Join(s.want, "\n")), "\n")
	if ok, wi, gi := matchLines(want, gotLines); !ok {
		at := "the output ends"
		if gi < len(gotLines) {
			at = fmt.Sprintf("output line %d is %q", gi+1, gotLines[gi])
		}
		shown := "the document shows no more lines"
		if wi < len(want) {
			shown = fmt.Sprintf("line %d shows %q", s.line+1+wi, want[wi])
		}
		t.Errorf("%s: the output differs from the document's: %s, %s (... in the document stands for any lines). The output:\n%s",
			s.command, shown, at, got)
	}
}

// rolloutUnderWay is what kubecel plan says of a rule whose rollout is under way.
var rolloutUnderWay = regexp.MustCompile(`(?m)^rule \S+: revision \d+ is the current revision, Progressing at step `)

// loadedReport is the line kubecel dev prints for each load of its rules file.
var loadedReport = regexp.MustCompile(`(?m)^\[\d\d:\d\d:\d\d\] Loaded `)

// readyReport is the line kubecel dev prints once its sample parents are Ready, or
// some are not after a while.
var readyReport = regexp.MustCompile(`(?m)^\[\d\d:\d\d:\d\d\] (?:The sample parent is|All \d+ sample parents are|\d+ of \d+ sample parents? (?:is|are) not) Ready.*$`)

// startDev starts a kubecel dev command line in the copy, with the repository's
// control-plane binaries, stops it when the test ends, and waits until the controller
// has converged on the rules of its dir and its sample parents are Ready (unless it
// runs --minimal, where they never are). It returns what dev prints.
func (e *docEnv) startDev(command, dir string) (*testenv.Buffer, error) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "sh", "-c", "exec "+command+" --bin-dir "+filepath.Join(e.root, "bin"))
	cmd.Dir = e.copy
	cmd.Env = []string{"PATH=" + e.path, "HOME=" + e.home, testenv.RaceEnv}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 2 * time.Minute
	out := &testenv.Buffer{}
	cmd.Stdout = out
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, err
	}
	// Stopped when TestDocs ends, not with the subtest that needed it first.
	e.t.Cleanup(func() {
		cancel()
		err := cmd.Wait()
		testenv.CheckRaces(e.t, command, out.String())
		if err != nil && !errors.Is(err, context.Canceled) {
			e.t.Errorf("kubecel dev: %v\n%s", err, out.String())
		}
	})
	deadline := time.Now().Add(4 * time.Minute)
	waiting, converged := "kubecel dev to start", false
	for {
		text := out.String()
		switch {
		case !strings.Contains(text, "Press Ctrl-C to stop."):
		case !converged:
			got, code, err := e.sh(ctx, fmt.Sprintf("kubecel plan --rules %[1]s/rules.yaml --kubeconfig %[1]s/kubeconfig", dir))
			if err != nil {
				return out, err
			}
			if converged = code == 0; converged {
				continue
			}
			waiting = fmt.Sprintf("the examples to converge: kubecel plan exits %d:\n%s", code, got)
		case strings.Contains(command, "--minimal"):
			return out, nil
		default:
			waiting = "dev to say that its sample parents are Ready"
			if m := readyReport.FindString(text); m != "" {
				if strings.Contains(m, " not Ready") {
					return out, fmt.Errorf("%s\n%s", m, text)
				}
				return out, nil
			}
		}
		if time.Now().After(deadline) {
			return out, fmt.Errorf("waited 4 minutes for %s\n%s", waiting, text)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
