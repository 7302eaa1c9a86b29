package rulestest

import (
	"context"
	"fmt"
	"io"
	"maps"
	"reflect"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/render"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// This file runs one test of a test file: it renders the parent as kubecel render does
// and compares the outcome with the test's expectations.

// testOutcome is what the rules computed for a test's parent.
type testOutcome struct {
	children []render.Doc
	// Status joins the status fields of every rule with a status block; nil when none
	// has one.
	status map[string]any
	ready  bool
	// notes are render's remarks (a rule that does not apply, a child that waits, the
	// refs looked up), shown with a failure.
	notes []string
	// vars are the assertion variables.
	vars rules.AssertionVars
}

// renderTest evaluates the rules for the test's parent, through the path of render. It
// returns the outcome, or the errors that stopped the evaluation.
func renderTest(ctx context.Context, s *testSuite, c *testCase) (*testOutcome, []string) {
	// The CRDs of --crds, and the APIs the rules define.
	out := &render.Output{YAML: true, Stdout: io.Discard, Stderr: io.Discard, Schemas: s.rules.Schemas()}
	failed, unmatched := out.Render(ctx, s.rules, s.crds, c.parent, c.observed)
	if unmatched != nil {
		// No rule applies: no children and no status, which a test may expect.
		out.Note(unmatched.Error())
	}
	if len(failed) > 0 {
		var msgs []string
		for _, err := range failed {
			msgs = append(msgs, strings.Split(err.Error(), "\n")...)
		}
		return nil, msgs
	}
	o := &testOutcome{ready: len(out.NotReady) == 0}
	children := map[string]any{}
	for _, r := range out.Applied {
		for _, ch := range r.Children {
			if ch.ForEach {
				children[ch.ID] = []any{}
			}
		}
	}
	for _, d := range out.Docs {
		switch {
		case d.Object == nil:
			if !strings.Contains(d.Comment, contract.PlaceholderUID) {
				o.notes = append(o.notes, d.Comment)
			}
		case d.Child != "":
			o.children = append(o.children, d)
			if d.Index >= 0 {
				list, _ := children[d.Child].([]any)
				children[d.Child] = append(list, d.Object)
			} else {
				children[d.Child] = d.Object
			}
		case d.Status:
			st, _ := d.Object["status"].(map[string]any)
			if o.status == nil {
				o.status = map[string]any{}
			}
			maps.Copy(o.status, st)
		}
	}
	o.vars = rules.AssertionVars{Parent: c.parent, Children: children, Status: o.status, Ready: o.ready}
	return o, nil
}

// checkTest compares an outcome with the test's expectations and returns each
// difference (several lines for a diff). Without update, it compares the children and
// the status; with update, the caller rewrites them instead.
func checkTest(ctx context.Context, c *testCase, o *testOutcome, update bool) []string {
	var msgs []string
	if c.hasChildren && !update {
		msgs = append(msgs, compareChildren(c.expectChildren, o.children)...)
	}
	if c.hasStatus && !update {
		got := o.status
		if got == nil {
			got = map[string]any{}
		}
		if !reflect.DeepEqual(c.expectStatus, got) {
			msgs = append(msgs, "status differs (-want +got):\n"+yamlDiff(c.expectStatus, got))
		}
	}
	if c.ready != nil && *c.ready != o.ready {
		msgs = append(msgs, fmt.Sprintf("ready is %v, want %v", o.ready, *c.ready))
	}
	for _, a := range c.asserts {
		if err := a.Check(ctx, o.vars); err != nil {
			msgs = append(msgs, "assert "+err.Error())
		}
	}
	return msgs
}

// checkError checks the errors of an evaluation against the text one of them must
// contain (expect.error).
func checkError(want string, errs []string) []string {
	if len(errs) == 0 {
		return []string{fmt.Sprintf("the rules evaluate without error; want an error containing %q", want)}
	}
	for _, e := range errs {
		if strings.Contains(e, want) {
			return nil
		}
	}
	return append([]string{fmt.Sprintf("no error contains %q; the errors:", want)}, errs...)
}

// compareChildren pairs each expected child with the rendered child of the same kind,
// name and (where the expectation gives one) namespace, and reports the differences,
// the missing children and the unexpected ones.
func compareChildren(want []map[string]any, got []render.Doc) []string {
	var msgs []string
	used := make([]bool, len(got))
	for _, w := range want {
		i := findChild(w, got, used)
		if i < 0 {
			msgs = append(msgs, fmt.Sprintf("child %s: the rules do not make it", childName(w)))
			continue
		}
		used[i] = true
		g := expectedForm(got[i].Object, w)
		if !reflect.DeepEqual(w, g) {
			msgs = append(msgs, fmt.Sprintf("child %s (rule %q child %q) differs (-want +got):\n%s", childName(w), got[i].Rule, got[i].Child, yamlDiff(w, g)))
		}
	}
	for i, d := range got {
		if !used[i] {
			msgs = append(msgs, fmt.Sprintf("child %s (rule %q child %q): not expected", childName(d.Object), d.Rule, d.Child))
		}
	}
	return msgs
}

// findChild returns the index of the first unused rendered child that is want.
func findChild(want map[string]any, got []render.Doc, used []bool) int {
	for i, d := range got {
		if !used[i] && isChild(want, d.Object) {
			return i
		}
	}
	return -1
}

// isChild reports whether obj is the child that want describes: the same kind and name,
// and the same namespace where want gives one.
func isChild(want, obj map[string]any) bool {
	wns, wname := clikit.ObjectName(want)
	ns, name := clikit.ObjectName(obj)
	return obj["kind"] == want["kind"] && name == wname && (wns == "" || wns == ns)
}

func childName(obj map[string]any) string {
	ns, name := clikit.ObjectName(obj)
	return fmt.Sprintf("%v %s", obj["kind"], clikit.Namespaced(ns, name))
}

// expectedForm is a rendered child as an expectation states it: kubecel's own labels
// and annotations and the owner references are left out unless the expectation gives
// them, and so is the namespace. With no expectation (want nil, for --update), the
// namespace stays.
func expectedForm(obj, want map[string]any) map[string]any {
	out := runtime.DeepCopyJSON(obj)
	md, _ := out["metadata"].(map[string]any)
	if md == nil {
		return out
	}
	wmd, _ := want["metadata"].(map[string]any)
	for _, key := range []string{"labels", "annotations"} {
		m, _ := md[key].(map[string]any)
		wm, given := wmd[key].(map[string]any)
		for k := range m {
			if _, ok := wm[k]; !ok && isKubecelKey(k) {
				delete(m, k)
			}
		}
		if len(m) == 0 && !given {
			delete(md, key)
		}
	}
	if _, ok := wmd["ownerReferences"]; !ok {
		delete(md, "ownerReferences")
	}
	if _, ok := wmd["namespace"]; !ok && want != nil {
		delete(md, "namespace")
	}
	return out
}

// isKubecelKey reports whether a label or annotation key is one kubecel writes.
func isKubecelKey(k string) bool {
	return k == contract.LabelManagedBy || strings.HasPrefix(k, "kubecel.dev/")
}

// yamlDiff is a unified diff of the YAML of two values.
func yamlDiff(want, got any) string {
	a, _ := yaml.Marshal(want)
	b, _ := yaml.Marshal(got)
	diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(strings.TrimSuffix(string(a), "\n")), B: difflib.SplitLines(strings.TrimSuffix(string(b), "\n")),
		FromFile: "want", ToFile: "got", Context: 3,
	})
	return strings.TrimRight(diff, "\n")
}
