package rulesource

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

// ruleDoc is a rules document with one rule per name; a name ending in "!" gets a CEL
// syntax error.
func ruleDoc(names ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n")
	for _, n := range names {
		expr := "${parent.metadata.name}"
		if broken, ok := strings.CutSuffix(n, "!"); ok {
			n, expr = broken, "${parent.metadata.name +}"
		}
		fmt.Fprintf(&b, `  - name: %s
    parent: {apiVersion: v1, resource: namespaces}
    children:
      - id: cm
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "%s", namespace: default}
`, n, expr)
	}
	return b.String()
}

// applied records the rule sets a Loader applies.
type applied struct {
	mu   sync.Mutex
	sets []*rules.RuleSet
}

func (a *applied) apply(_ context.Context, rs *rules.RuleSet) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sets = append(a.sets, rs)
}

// names returns the rules of the last applied set as "rule@source".
func (a *applied) names() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.sets) == 0 {
		return nil
	}
	var out []string
	for _, r := range a.sets[len(a.sets)-1].Rules {
		out = append(out, r.Name+"@"+r.Source)
	}
	return out
}

// inDir turns each "rule@file" into "rule@dir/file".
func inDir(dir string, names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		rule, file, _ := strings.Cut(n, "@")
		out[i] = rule + "@" + filepath.Join(dir, file)
	}
	return out
}

func (a *applied) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.sets)
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig())))
	t.Cleanup(cancel)
	return ctx
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestDirectoryKeepsLastGoodPerFile drives the reloads by hand (reload is what Watch
// calls on each change), so the test needs no clock.
func TestDirectoryKeepsLastGoodPerFile(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml"), filepath.Join(dir, "c.yaml")
	write(t, a, ruleDoc("a"))
	write(t, b, ruleDoc("b"))
	write(t, c, ruleDoc("c1")+"---\n"+ruleDoc("c2"))
	write(t, filepath.Join(dir, "notes.txt"), "not rules")
	write(t, filepath.Join(dir, ".hidden.yaml"), "not: rules")
	write(t, filepath.Join(dir, "a_test.yaml"), "kind: RuleTest")
	reg := prometheus.NewRegistry()
	var got applied
	l, err := New(Options{Sources: []Source{File(dir)}, Apply: got.apply, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(step string, want ...string) {
		t.Helper()
		if diff := cmp.Diff(inDir(dir, want...), got.names()); diff != "" {
			t.Errorf("%s: running rules (-want +got):\n%s", step, diff)
		}
	}
	reload := func() error {
		t.Helper()
		return l.reload(ctx, false)
	}
	check("start: three files, one of two YAML documents", "a@a.yaml", "b@b.yaml", "c1@c.yaml", "c2@c.yaml")

	// b breaks; a and c change too and still reload.
	write(t, b, ruleDoc("b", "b-new!"))
	write(t, a, ruleDoc("a", "a2"))
	write(t, c, ruleDoc("c1"))
	err = reload()
	if err == nil || !strings.Contains(err.Error(), b+":") || !strings.Contains(err.Error(), "parent.metadata.name +") {
		t.Errorf("reload error %v: want b.yaml's broken expression with its place", err)
	}
	check("b broken", "a@a.yaml", "a2@a.yaml", "b@b.yaml", "c1@c.yaml")
	if n := testenv.Counter(t, reg, "kubecel_rules_reload_total", "result", "error"); n != 1 {
		t.Errorf("reload errors %v, want 1", n)
	}
	failing := func(want float64) {
		t.Helper()
		if n, _ := testenv.Gauge(t, reg, "kubecel_rules_failing_sources", "", ""); n != want {
			t.Errorf("kubecel_rules_failing_sources %v, want %v", n, want)
		}
	}
	failing(1)

	// Nothing changed: nothing is applied or reported again; another change to c
	// reloads, still with b's last good version, and b is not reported again.
	before := got.count()
	if err := reload(); err != nil || got.count() != before {
		t.Errorf("a reload without changes returned %v and applied %d sets", err, got.count()-before)
	}
	write(t, c, ruleDoc("c3"))
	_ = reload()
	check("c changes while b is broken", "a@a.yaml", "a2@a.yaml", "b@b.yaml", "c3@c.yaml")
	if n := testenv.Counter(t, reg, "kubecel_rules_reload_total", "result", "error"); n != 1 {
		t.Errorf("reload errors %v, want still 1: a broken version is reported once", n)
	}

	// b is fixed.
	write(t, b, ruleDoc("b", "b-new"))
	if err := reload(); err != nil {
		t.Fatal(err)
	}
	check("b fixed", "a@a.yaml", "a2@a.yaml", "b@b.yaml", "b-new@b.yaml", "c3@c.yaml")
	failing(0)

	// a takes c's rule name: the part that changed, a, keeps its last good version,
	// and the error names both places.
	write(t, a, ruleDoc("a", "c3"))
	err = reload()
	if want := fmt.Sprintf("%s:12: rule \"c3\": name: duplicate rule name (also at %s:4)", a, c); err == nil || err.Error() != want+
		"; rule names must be unique across all rules files and ConfigMaps: rename one" {
		t.Errorf("reload error %v: want only the duplicate, reported on a.yaml:\n%s", err, want)
	}
	check("a duplicates c", "a@a.yaml", "a2@a.yaml", "b@b.yaml", "b-new@b.yaml", "c3@c.yaml")

	// A new file joins in name order; a removed file takes its rules away.
	write(t, a, ruleDoc("a"))
	write(t, filepath.Join(dir, "ab.yaml"), ruleDoc("ab"))
	if err := os.Remove(c); err != nil {
		t.Fatal(err)
	}
	if err := reload(); err != nil {
		t.Fatal(err)
	}
	check("file added and removed", "a@a.yaml", "ab@ab.yaml", "b@b.yaml", "b-new@b.yaml")
}

func TestStart(t *testing.T) {
	dir := t.TempDir()
	good, broken := filepath.Join(dir, "good.yaml"), filepath.Join(dir, "broken.yaml")
	write(t, good, ruleDoc("good"))
	write(t, broken, ruleDoc("ok")+"---\n"+ruleDoc("bad!"))
	tests := []struct {
		name    string
		sources []Source
		want    []string
		wantErr string
	}{
		{name: "files and the standard input, in order", sources: []Source{Static("<stdin>", []byte(ruleDoc("in"))), File(good)},
			want: []string{"in@<stdin>", "good@" + good}},
		{name: "a broken file fails the start with its place", sources: []Source{File(good), File(broken)},
			wantErr: broken + `:23: rule "bad" child "cm": template.metadata.name: ${parent.metadata.name +}: `},
		{name: "a missing file fails the start", sources: []Source{File(filepath.Join(dir, "missing.yaml"))},
			wantErr: "open " + filepath.Join(dir, "missing.yaml") + ": no such file or directory"},
		{name: "the same rule twice", sources: []Source{File(good), Static("<stdin>", []byte(ruleDoc("good")))},
			wantErr: `<stdin>:4: rule "good": name: duplicate rule name (also at ` + good + ":4)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got applied
			l, err := New(Options{Sources: tt.sources, Apply: got.apply})
			if err != nil {
				t.Fatal(err)
			}
			err = l.Start(testContext(t))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("start error %v, want one containing %q", err, tt.wantErr)
				}
				if got.count() != 0 {
					t.Errorf("a failed start applied %v", got.names())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.names()); diff != "" {
				t.Errorf("running rules (-want +got):\n%s", diff)
			}
		})
	}
}

// TestApplyMayWarn: the controller's Apply reports rules that cannot run through Warn,
// synchronously; that must not wait for the reload that called Apply.
func TestApplyMayWarn(t *testing.T) {
	var l *Loader
	warned := false
	l, err := New(Options{Sources: []Source{Static("<stdin>", []byte(ruleDoc("a")))}, Apply: func(context.Context, *rules.RuleSet) {
		l.Warn("a", "RuleTest", "rule a cannot run")
		warned = true
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if !warned {
		t.Error("Apply was not called")
	}
}

// fakeSource is a fixed list of parts, for the cases no file can make (an optional part).
type fakeSource []part

func (f fakeSource) String() string                                     { return "fake" }
func (f fakeSource) start(context.Context, time.Duration, func()) error { return nil }
func (f fakeSource) parts() []part                                      { return f }

// TestStartLeavesOutOptionalParts: at the start, a selector's ConfigMap that does not
// load, or that takes a named source's rule name, is left out (and reported); the named
// sources start.
func TestStartLeavesOutOptionalParts(t *testing.T) {
	optional := func(name, data string) part {
		return part{name: name, docs: []rules.Document{{Source: name, Data: []byte(data)}}, optional: true}
	}
	named := Static("named.yaml", []byte(ruleDoc("a")))
	teams := fakeSource{optional("team-1", ruleDoc("a")), optional("team-2", ruleDoc("b!")), optional("team-3", ruleDoc("c"))}
	reg := prometheus.NewRegistry()
	var got applied
	l, err := New(Options{Sources: []Source{named, teams}, Apply: got.apply, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a@named.yaml", "c@team-3"}, got.names()); diff != "" {
		t.Errorf("running rules (-want +got):\n%s", diff)
	}
	if n := testenv.Counter(t, reg, "kubecel_rules_reload_total", "result", "error"); n != 2 {
		t.Errorf("reload errors %v, want 2 (team-1 and team-2)", n)
	}
}

// mutableSource is a source whose parts the test changes between reloads.
type mutableSource struct{ ps *[]part }

func (m mutableSource) String() string                                     { return "mutable" }
func (m mutableSource) start(context.Context, time.Duration, func()) error { return nil }
func (m mutableSource) parts() []part                                      { return *m.ps }

// TestRefusedPartBlocksNoEdit: a selector's ConfigMap that repeats a rule name of a
// named source is refused, and stays refused while that source edits the rule: it can
// neither take the rule nor freeze the source at its last good version. Once the source
// drops the rule, the ConfigMap's rule runs.
func TestRefusedPartBlocksNoEdit(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "rules.yaml")
	write(t, file, ruleDoc("ga", "other"))
	squat := []part{}
	squatter := func(rule string) {
		squat = []part{{name: "configmap rules/team-b", docs: []rules.Document{{Source: "configmap rules/team-b key rules.yaml", Origin: "configmap rules/team-b", Data: []byte(ruleDoc(rule))}}, optional: true}}
	}
	var got applied
	l, err := New(Options{Sources: []Source{File(file), mutableSource{&squat}}, Apply: got.apply, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	squatter("ga")
	if err := l.reload(ctx, false); err == nil || !strings.Contains(err.Error(), "duplicate rule name") {
		t.Errorf("reload with the squatter: err = %v, want its duplicate rule name", err)
	}
	if diff := cmp.Diff([]string{"ga@" + file, "other@" + file}, got.names()); diff != "" {
		t.Errorf("squatter refused: running rules (-want +got):\n%s", diff)
	}
	write(t, file, ruleDoc("ga", "other", "third"))
	_ = l.reload(ctx, false)
	if diff := cmp.Diff([]string{"ga@" + file, "other@" + file, "third@" + file}, got.names()); diff != "" {
		t.Errorf("the file edited while the squatter is refused: running rules (-want +got):\n%s", diff)
	}
	write(t, file, ruleDoc("other", "third"))
	if err := l.reload(ctx, false); err != nil {
		t.Errorf("reload without the file's ga: %v", err)
	}
	if diff := cmp.Diff([]string{"other@" + file, "third@" + file, "ga@configmap rules/team-b key rules.yaml"}, got.names()); diff != "" {
		t.Errorf("the file dropped ga: running rules (-want +got):\n%s", diff)
	}
}

// TestReloadTakesOverUnchangedRules: a reload after an edit of one file compiles the
// rules of that file and takes over the others' (rules.Options.Previous): their compiled
// children are the objects of the set before, while the edited file's are new.
func TestReloadTakesOverUnchangedRules(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	write(t, a, ruleDoc("a1", "a2"))
	write(t, b, ruleDoc("b1"))
	var got applied
	l, err := New(Options{Sources: []Source{File(dir)}, Apply: got.apply})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	write(t, b, ruleDoc("b1", "b2"))
	if err := l.reload(ctx, false); err != nil {
		t.Fatal(err)
	}
	if got.count() != 2 {
		t.Fatalf("%d rule sets applied, want 2", got.count())
	}
	before, after := got.sets[0].Rules, got.sets[1].Rules
	taken := map[string]bool{}
	for _, r := range after {
		for _, p := range before {
			if p.Name == r.Name {
				taken[r.Name] = r.Children[0] == p.Children[0]
			}
		}
	}
	// b1 is unchanged at its place in the edited file, so it is taken over too: what
	// counts is a rule's own source and place, not the rest of its file.
	want := map[string]bool{"a1": true, "a2": true, "b1": true}
	if diff := cmp.Diff(want, taken); diff != "" {
		t.Errorf("rules taken over from the set before (-want +got):\n%s", diff)
	}
}
