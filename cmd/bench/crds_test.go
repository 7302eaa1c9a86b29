package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubecel/kubecel/rules"
)

// TestCRDRules loads the --crds rules for K=3, evaluates each rule for its first
// parent, and checks an edit of one rule: it changes that rule's revision alone, and
// puts the value in its ConfigMap and status.
func TestCRDRules(t *testing.T) {
	kinds := crdKinds(3)
	var names []string
	for _, k := range kinds {
		names = append(names, k.rule)
	}
	if want := []string{"thing0", "thing1", "thing2", rolloutRule, lateRule}; !slices.Equal(names, want) {
		t.Fatalf("crdKinds(3) rules %v, want %v", names, want)
	}
	base, err := rules.Load(crdRules(kinds, nil), rules.Options{})
	if err != nil {
		t.Fatalf("the --crds rules do not load: %v\n%s", err, crdRules(kinds, nil))
	}
	edited, err := rules.Load(crdRules(kinds, map[string]string{"thing1": "1", rolloutRule: "1"}), rules.Options{})
	if err != nil {
		t.Fatalf("the edited --crds rules do not load: %v", err)
	}
	for i, k := range kinds {
		r, e := base.Rules[i], edited.Rules[i]
		if r.Name != k.rule || r.Parent.GVR != k.gvr() {
			t.Errorf("rule %d is %s on %v, want %s on %v", i, r.Name, r.Parent.GVR, k.rule, k.gvr())
		}
		if got := r.Rollout != nil; got != k.policy {
			t.Errorf("rule %s: policy %v, want %v", k.rule, got, k.policy)
		} else if k.policy && !slices.Equal(r.Rollout.Steps, crdRolloutSteps) {
			t.Errorf("rule %s: steps %v, want %v", k.rule, r.Rollout.Steps, crdRolloutSteps)
		}
		wantEdit := k.rule == "thing1" || k.rule == rolloutRule
		if changed := r.Revision != e.Revision; changed != wantEdit {
			t.Errorf("rule %s: revision changed %v by the edit, want %v", k.rule, changed, wantEdit)
		}
		for _, tc := range []struct {
			rule *rules.Rule
			edit any
		}{{r, nil}, {e, map[bool]any{true: "1", false: nil}[wantEdit]}} {
			res, err := tc.rule.Evaluate(t.Context(), k.parent(benchNS, 0).Object, rules.Observed{})
			if err != nil {
				t.Fatalf("rule %s: %v", k.rule, err)
			}
			var got []string
			for _, c := range res.Children {
				got = append(got, c.ID+" "+c.Object["kind"].(string)+" "+c.Object["metadata"].(map[string]any)["name"].(string))
				if c.ID == "config" {
					data := c.Object["data"].(map[string]any)
					if data["value"] != crdValue || data["edit"] != tc.edit {
						t.Errorf("rule %s: config data %v, want value %s and edit %v", k.rule, data, crdValue, tc.edit)
					}
				}
			}
			name := k.parentName(0)
			if want := []string{"config ConfigMap " + name + "-config", "service Service " + name}; !slices.Equal(got, want) {
				t.Errorf("rule %s: children %v, want %v", k.rule, got, want)
			}
			if res.Status["value"] != crdValue || res.Status["edit"] != tc.edit {
				t.Errorf("rule %s: status %v, want value %s and edit %v", k.rule, res.Status, crdValue, tc.edit)
			}
		}
	}
}

// TestCRDKinds checks the CRDs and parents: names that match, unique kinds, and every
// parent and child name read back to its rule.
func TestCRDKinds(t *testing.T) {
	seen := map[string]bool{}
	parents := 0
	for _, k := range crdKinds(12) {
		crd := k.crd()
		if crd.Name != k.plural+"."+crdsGroup || crd.Spec.Names.Plural != k.plural || crd.Spec.Names.Kind != k.kind {
			t.Errorf("%s: CRD %s names %+v", k.rule, crd.Name, crd.Spec.Names)
		}
		v := crd.Spec.Versions[0]
		if v.Subresources == nil || v.Subresources.Status == nil || v.Schema.OpenAPIV3Schema.Properties["spec"].Required[0] != "value" {
			t.Errorf("%s: version %+v has no status subresource or spec.value", k.rule, v)
		}
		if seen[k.kind] || seen[k.plural] {
			t.Errorf("kind %s or plural %s twice", k.kind, k.plural)
		}
		seen[k.kind], seen[k.plural] = true, true
		for j := range k.parents {
			p := k.parent(benchNS, j)
			name := p.GetName()
			if p.GetKind() != k.kind || p.GetAPIVersion() != crdsGroup+"/v1" || seen[name] {
				t.Errorf("%s: parent %d is %s %s (twice: %v)", k.rule, j, p.GetKind(), name, seen[name])
			}
			seen[name] = true
			parents++
			for _, n := range []string{name, name + "-config"} {
				if got := ruleOf(n); got != k.rule {
					t.Errorf("ruleOf(%q) = %q, want %q", n, got, k.rule)
				}
			}
		}
	}
	if parents != 12+rolloutParents+1 {
		t.Errorf("%d parents, want %d", parents, 12+rolloutParents+1)
	}
	for _, n := range []string{"", "bench-config", "kubecel-identity", "-p0"} {
		if got := ruleOf(n); got != "" {
			t.Errorf("ruleOf(%q) = %q, want none", n, got)
		}
	}
}

// lockWaitText is a /metrics excerpt: the lock-wait histogram with the counts given per
// bucket (not cumulative), in the engine's buckets, and the active rules.
func lockWaitText(active int, perBucket map[string]int) string {
	bounds := []string{"0.0001", "0.0002", "0.0005", "0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "+Inf"}
	var b strings.Builder
	b.WriteString("# HELP kubecel_active_rules Rules currently running.\n# TYPE kubecel_active_rules gauge\n")
	b.WriteString("kubecel_active_rules " + strconv.Itoa(active) + "\n")
	b.WriteString("# HELP kubecel_reconcile_lock_wait_seconds Time.\n# TYPE kubecel_reconcile_lock_wait_seconds histogram\n")
	cum := 0
	for _, le := range bounds {
		cum += perBucket[le]
		b.WriteString(`kubecel_reconcile_lock_wait_seconds_bucket{le="` + le + `"} ` + strconv.Itoa(cum) + "\n")
	}
	b.WriteString("kubecel_reconcile_lock_wait_seconds_sum 0.5\nkubecel_reconcile_lock_wait_seconds_count " + strconv.Itoa(cum) + "\n")
	return b.String()
}

func TestLongestWait(t *testing.T) {
	parse := func(text string) scraped {
		t.Helper()
		m, err := parseScrape([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	base := map[string]int{"0.0001": 500, "0.002": 3, "0.05": 1}
	for _, tc := range []struct {
		name          string
		before, after map[string]int
		want          string
	}{
		{"no reconcile between the readings", base, base, "none"},
		{"the fastest bucket only", base, map[string]int{"0.0001": 900, "0.002": 3, "0.05": 1}, "<= 0.1 ms"},
		{"a wait in a middle bucket; an older slower one does not count", base, map[string]int{"0.0001": 510, "0.002": 3, "0.005": 2, "0.05": 1}, "<= 5 ms"},
		{"the slower bucket gains one", base, map[string]int{"0.0001": 510, "0.002": 3, "0.05": 2}, "<= 50 ms"},
		{"beyond the last bound", base, map[string]int{"0.0001": 500, "0.002": 3, "0.05": 1, "+Inf": 1}, "> 10 s"},
		{"a second bucket", nil, map[string]int{"1": 4}, "<= 1 s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before *histogram
			if tc.before != nil {
				before = parse(lockWaitText(3, tc.before)).histogram(lockWaitMetric)
			}
			after := parse(lockWaitText(3, tc.after)).histogram(lockWaitMetric)
			if got := longestWait(before, after); got != tc.want {
				t.Errorf("longestWait = %q, want %q", got, tc.want)
			}
			bound, ok := waitBound(tc.want)
			if tc.want == "none" {
				if ok {
					t.Errorf("waitBound(none) = %v, true", bound)
				}
			} else if !ok || tc.want != "> 10 s" && longestWait(nil, &histogram{bounds: []float64{bound}, counts: []uint64{1}}) != tc.want {
				t.Errorf("waitBound(%q) = %v, %v: does not read back", tc.want, bound, ok)
			}
		})
	}
	// An older binary: no histogram, no active rules gauge.
	old := parse("# TYPE kubecel_reconcile_total counter\nkubecel_reconcile_total{rule=\"a\",result=\"success\"} 7\nkubecel_reconcile_total{rule=\"b\",result=\"success\"} 5\n")
	if got := longestWait(nil, old.histogram(lockWaitMetric)); got != "n/a" {
		t.Errorf("longestWait without the histogram = %q, want n/a", got)
	}
	if v, ok := old.value("kubecel_active_rules"); ok {
		t.Errorf("value of a missing gauge = %v, true", v)
	}
	if v, ok := old.value("kubecel_reconcile_total"); !ok || v != 12 {
		t.Errorf("value of the reconciles = %v, %v; want 12 summed over the rules", v, ok)
	}
	if v, ok := parse(lockWaitText(7, base)).value("kubecel_active_rules"); !ok || v != 7 {
		t.Errorf("value of the active rules = %v, %v; want 7", v, ok)
	}
	if b, ok := waitBound("> 10 s"); !ok || !math.IsInf(b, 1) {
		t.Errorf("waitBound(> 10 s) = %v, %v", b, ok)
	}
}

// TestCRDsRow adds rows to a document as the bench does, reads them back as the goals
// table does, and checks the goals' verdicts (a "before:" row left out).
func TestCRDsRow(t *testing.T) {
	if goals := crdsGoals(nil); len(goals) != 3 || goals[0].met != "not measured" || goals[2].met != "not measured" {
		t.Errorf("crdsGoals without rows = %+v", goals)
	}
	res := func(k int, rules time.Duration, known bool, others int, waits [3]string, note string) *crdsResult {
		r := &crdsResult{k: k, parents: k + rolloutParents, rulesRunning: rules, rulesKnown: known, converged: 12 * time.Second,
			writes:     writeCounts{"apply configmaps": k + 20, "apply services": k + 20, "apply thing0s/status": k + 20},
			ruleWrites: writeCounts{"thing0": 3 * k, rolloutRule: 80, "": 2}, steadyReconciles: k + 20,
			rssPeak: 190e6, rssSettled: 180e6, rssSettledAnon: 120e6, cpuConverge: 3, cpuTotal: 9,
			reload:  crdsEdit{took: 800 * time.Millisecond, sinceWrite: 2500 * time.Millisecond, others: others},
			rollout: crdsEdit{took: 9 * time.Second}, rolloutSteps: []time.Duration{time.Second, 4 * time.Second, 9 * time.Second},
			overall: "<= 20 ms", machine: machine{cpus: 2}, loadBefore: "1.0 1.0 1.0", loadAfter: "2.0 2.0 2.0", date: "2026-11-28 10:00", note: note}
		for i, w := range waits {
			r.waits[i].longest = w
		}
		return r
	}
	doc := "# B\n"
	for _, r := range []*crdsResult{
		res(200, 3*time.Second, true, 0, [3]string{"<= 2 ms", "<= 10 ms", "<= 0.5 ms"}, ""),
		res(1000, 8*time.Second, true, 0, [3]string{"<= 5 ms", "<= 5 ms", "<= 5 ms"}, ""),
		res(200, 0, false, 40, [3]string{"n/a", "n/a", "n/a"}, "before: an older binary"),
		res(1000, 0, false, 40, [3]string{"n/a", "n/a", "n/a"}, "before: an older binary"),
	} {
		var err error
		if doc, err = insertRow(doc, crdsHeading, crdsHeader, r.row()); err != nil {
			t.Fatal(err)
		}
	}
	rows := runs(doc, crdsHeading)
	if len(rows) != 4 || rows[0]["rules running"] != "3.0" || rows[2]["rules running"] != "n/a" || rows[0]["writes/parent"] != "3.00" ||
		rows[0]["rollout"] != "9.0 (1.0 / 4.0 / 9.0)" || rows[1]["lock wait: CRD / reload / rollout / run"] != "<= 5 ms / <= 5 ms / <= 5 ms / <= 20 ms" {
		t.Fatalf("rows read back: %v", rows)
	}
	got := crdsGoals(rows)
	want := []goal{
		{got[0].name, "rules running after **8.0 s**, parents converged after **12.0 s**, **3.00** writes per parent, **0** at rest, settled RSS **172 MiB** (row 2026-11-28 10:00)",
			"running **met**; converged **met**; writes **met**; at rest **met**; RSS **met**"},
		{got[1].name, "its parent at the edit **0.8 s** after the reload (2.5 s after the write); **0** writes to the other rules (row 2026-11-28 10:00)", "time **met**; writes **met**"},
		{got[2].name, "longest waits, by the histogram's buckets: a CRD appears **<= 2 ms**, the reload **<= 10 ms**, the rollout **<= 0.5 ms** (row 2026-11-28 10:00)", "**met**"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(goal{})); diff != "" {
		t.Errorf("crdsGoals (-want +got):\n%s", diff)
	}
	if got, want := parentsAsOne(writeCounts{"patch configmaps": 5, "patch thing1s/status": 1, "patch thing2s/status": 1, "patch rolloutthings": 2}).String(),
		"patch configmaps: 5, patch parents: 2, patch parents/status: 2"; got != want {
		t.Errorf("parentsAsOne = %q, want %q", got, want)
	}
	// The same rows with the latest at K=200 over the bound.
	doc, _ = insertRow(doc, crdsHeading, crdsHeader, res(200, time.Second, true, 0, [3]string{"<= 2 ms", "<= 20 ms", "none"}, "").row())
	if g := crdsGoals(runs(doc, crdsHeading))[2]; g.met != "**not met**" {
		t.Errorf("a 20 ms wait: %+v", g)
	}
}

// TestReadWatch rewrites a file as the bench rewrites the rules, reads it as the
// controller does, and checks that the read is seen, and the write is not.
func TestReadWatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(path, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := watchReads(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	written := time.Now()
	if err := writeAtomically(path, []byte("b")); err != nil {
		t.Fatal(err)
	}
	// A read of another file of the directory comes after any event of the write: once
	// it is seen, so would be a read noted for the write.
	if err := os.WriteFile(filepath.Join(dir, "other"), []byte("c"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(filepath.Join(dir, "other")); err != nil {
		t.Fatal(err)
	}
	seen := func(cond func() bool) error {
		return wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			return cond(), nil
		})
	}
	if err := seen(func() bool { return w.events > 0 }); err != nil {
		t.Fatalf("the read of another file was not seen: %v", err)
	}
	if at, ok := w.firstAfter(written); ok {
		t.Fatalf("a read at %v after the write alone", at)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "b" {
		t.Fatalf("read %q, %v", data, err)
	}
	if err := seen(func() bool { return len(w.reads) > 0 }); err != nil {
		t.Fatalf("the read was not seen: %v", err)
	}
	if _, ok := w.firstAfter(written); !ok {
		t.Errorf("the read was noted before the write")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("the rewrite left %d files", len(entries))
	}
}
