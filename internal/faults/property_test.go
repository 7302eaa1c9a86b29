package faults

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

var seedFlag = flag.Uint64("faults.seed", 0, "seed of TestPropertyOwnership's random steps (0: one from the clock)")

// propertyRules holds the rules of Active. Each gives the widgets labelled <name>: on two
// ConfigMaps named spec.name + "-" + Suffix, one in the widget's namespace and one in
// the other; with When, only to widgets whose spec.name does not start with "z".
const propertyRules = rulesHead + `{{range .Active}}  - name: {{$.Rule}}-{{.Name}}
    parent:
      apiVersion: faults.kubecel.dev/v1
      resource: widgets
      namespaces: [{{$.NS}}]
      selector:
        matchLabels:
          {{.Name}}: "on"
{{- if .When}}
      when: '!parent.spec.name.startsWith("z")'
{{- end}}
    children:
      - id: local
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.spec.name}-{{.Suffix}}"}
          data: {parent: "${parent.metadata.name}"}
      - id: remote
        crossNamespace: true
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.spec.name}-{{.Suffix}}", namespace: "{{$.Other}}"}
          data: {parent: "${parent.metadata.name}"}
{{end}}`

// propertyRule is one rule of propertyRules.
type propertyRule struct {
	Name, Suffix string
	When         bool
}

// ruleSets are the rules files a run switches between: rule a with either name template,
// rule b, or both.
var ruleSets = func() [][]propertyRule {
	a, a2, b := propertyRule{Name: "a", Suffix: "a"}, propertyRule{Name: "a", Suffix: "a2"}, propertyRule{Name: "b", Suffix: "b", When: true}
	return [][]propertyRule{{a}, {a2}, {b}, {a, b}, {a2, b}}
}()

// The run's widgets, the values of their spec.name, and the suffixes of the names that
// foreign objects take.
var (
	propertyParents  = []string{"p0", "p1", "p2"}
	propertyNames    = []string{"x", "y", "z"}
	propertySuffixes = []string{"a", "a2", "b", "sq"}
)

func specName(p *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(p.Object, "spec", "name")
	return name
}

func (r propertyRule) selects(p *unstructured.Unstructured) bool {
	return p.GetLabels()[r.Name] == "on" && (!r.When || !strings.HasPrefix(specName(p), "z"))
}

// TestPropertyOwnership runs a seeded random sequence of steps on a few widgets and one
// or two rules: create, edit the spec (the children's names follow), relabel in and out
// of a rule's selector, delete, reload the rules (add or remove a rule, change a name
// template), and create a foreign ConfigMap under a name some widget may compute. After
// each step, once the cluster is quiet: no foreign object was modified or deleted, no
// object belongs to two widgets, no widget hangs in deletion or keeps the finalizer of a
// rule that does not select it, every child a widget should have exists (its or someone
// else's), and every object kubecel labelled belongs to a live widget that still
// produces it (or to a rule that was removed, whose children may stay, or to a widget
// whose new child's name is taken, which keeps its old children meanwhile). Among the
// steps, other parties act too (property_parties_test.go): a forger, a second
// installation, a squatting rules source; nothing they made is touched, and nothing of
// a removed rule is deleted while its widget lives.
func TestPropertyOwnership(t *testing.T) {
	steps, knownSteps := 30, 30
	if *long {
		// The known seeds replay what they reached early (seed 11 by step 32, 101 within
		// 30 steps); the clock's seed explores 200. CI's whole run must stay within the
		// hour.
		steps, knownSteps = 200, 80
	}
	if *seedFlag != 0 {
		t.Run(fmt.Sprintf("seed=%d", *seedFlag), func(t *testing.T) { runOwnership(t, *seedFlag, steps) })
		return
	}
	for _, seed := range knownSeeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runOwnership(t, seed, knownSteps) })
	}
	clock := uint64(time.Now().UnixNano())
	t.Run(fmt.Sprintf("seed=%d", clock), func(t *testing.T) { runOwnership(t, clock, steps) })
}

// knownSeeds run every time, besides a random one. A seed joins when it reached a
// defect, real or planted, that the random seeds reach seldom; the end of each run logs
// who held the names its widgets computed ("held by"), which shows what a seed reaches.
//   - 11: the squatter's rule a runs, is removed, and the file's rule a comes back; with
//     a rule's children not bound to their origin, the file's rule pruned the squatter's
//     (found by planting that defect). It also reaches, at step 5, a widget's own child
//     in its namespace: with that child's owner reference planted away, it fails there.
//   - 101: a rule removed while the second installation's reconcile of it was running
//     left its finalizer on a widget (docs/reliability.md, Known issues 3), in 2 of 5
//     runs before the fix.
var knownSeeds = []uint64{11, 101}

// runOwnership runs the steps of one seed.
func runOwnership(t *testing.T, seed uint64, steps int) {
	t.Logf("seed %d, %d steps", seed, steps)
	r := &ownershipRun{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed)), released: map[types.UID]releasedObject{}, holders: map[string]int{}}
	r.world = newWorldRules(t, "property", rulesHead) // the rules follow, with r's
	r.Forge = namespace(t, "property-forge")
	r.Active = ruleSets[3]
	r.Rules = writeRules(t, propertyRules, r)
	r.ctrl = r.startFirst()
	for range steps {
		r.do(r.step())
	}
	for _, name := range r.names() {
		r.do(r.deleteParent(name))
	}
	t.Logf("%d steps, %d foreign objects, %d objects of removed rules; names computed, held by: %s",
		len(r.steps), len(r.foreign), len(r.released), holders{r}.describeHolders())
}

// ownershipRun is one run of TestPropertyOwnership; its world and Active rules are the
// rules template's data.
type ownershipRun struct {
	*world
	Active []propertyRule
	parties

	t    *testing.T
	seed uint64
	rng  *rand.Rand
	ctrl *controller
	// foreign holds the objects the run created as another client would.
	foreign []*frozen
	// released holds the objects of rules that were removed (by UID): they stay, until
	// their rule is back and selects their widget, or their widget is gone.
	released map[types.UID]releasedObject
	// holders counts who held the names the widgets computed (see held).
	holders map[string]int
	steps   []string
}

// do records a step that has been taken and waits until the cluster is quiet, checking
// the invariants meanwhile.
func (r *ownershipRun) do(step string) {
	r.steps = append(r.steps, step)
	r.t.Logf("step %d: %s", len(r.steps), step)
	var last string
	fingerprint, since := "", time.Now()
	var s *snapshot
	quiet, _ := within(settle, func() (bool, string) {
		s = r.observe()
		if msg := r.safety(s) + r.partySafety(s) + r.releasedSafety(s); msg != "" {
			r.fail(msg)
		}
		if s.fingerprint != fingerprint {
			fingerprint, since = s.fingerprint, time.Now()
		}
		last = r.liveness(s)
		return last == "" && time.Since(since) > time.Second, ""
	})
	if !quiet {
		if last == "" {
			last = "objects kept changing"
		}
		r.fail(fmt.Sprintf("not quiet within %s: %s", settle, last))
	}
	holders{r}.held(s)
}

// fail ends the test with the counterexample: the seed and the steps so far.
func (r *ownershipRun) fail(msg string) {
	r.t.Helper()
	var b strings.Builder
	for i, s := range r.steps {
		fmt.Fprintf(&b, "\n  %2d. %s", i+1, s)
	}
	r.t.Fatalf("after step %d: %s\nseed %d (rerun: go test ./internal/faults -run TestPropertyOwnership -faults.seed=%d); steps:%s",
		len(r.steps), msg, r.seed, r.seed, b.String())
}

// step takes one random step and describes it.
func (r *ownershipRun) step() string {
	existing := map[string]*unstructured.Unstructured{}
	for _, name := range r.names() {
		p, err := r.widget(name)
		if err != nil {
			r.t.Fatal(err)
		}
		existing[name] = p
	}
	pick := func(from []string) string { return from[r.rng.IntN(len(from))] }
	var live []string
	for _, name := range propertyParents {
		if existing[name] != nil {
			live = append(live, name)
		}
	}
	var widgets []*unstructured.Unstructured
	for _, name := range live {
		widgets = append(widgets, existing[name])
	}
	for {
		switch op := r.rng.IntN(12); {
		case op < 2 && len(live) < len(propertyParents):
			name := pick(slices.DeleteFunc(slices.Clone(propertyParents), func(n string) bool { return existing[n] != nil }))
			labels := map[string]string{}
			for _, rule := range []string{"a", "b"} {
				if r.rng.IntN(3) > 0 {
					labels[rule] = "on"
				}
			}
			spec := pick(propertyNames)
			r.apply(name, labels, map[string]any{"name": spec})
			return fmt.Sprintf("create %s labels %v spec.name %s", name, labels, spec)
		case op >= 2 && op < 4 && len(live) > 0:
			p := existing[pick(live)]
			spec := pick(slices.DeleteFunc(slices.Clone(propertyNames), func(n string) bool { return n == specName(p) }))
			r.apply(p.GetName(), p.GetLabels(), map[string]any{"name": spec})
			return fmt.Sprintf("edit %s spec.name %s -> %s", p.GetName(), specName(p), spec)
		case op >= 4 && op < 6 && len(live) > 0:
			p := existing[pick(live)]
			labels, rule := p.GetLabels(), pick([]string{"a", "b"})
			if labels == nil {
				labels = map[string]string{}
			}
			verb := "into"
			if labels[rule] == "on" {
				delete(labels, rule)
				verb = "out of"
			} else {
				labels[rule] = "on"
			}
			r.apply(p.GetName(), labels, map[string]any{"name": specName(p)})
			return fmt.Sprintf("relabel %s %s rule %s (labels %v)", p.GetName(), verb, rule, labels)
		case op == 6 && len(live) > 0:
			return r.deleteParent(pick(live))
		case op == 7:
			return r.reload()
		case op == 8:
			if step, ok := r.createForeign(); ok {
				return step
			}
		case op == 9:
			if step, ok := r.forge(widgets); ok {
				return step
			}
		case op == 10:
			return r.toggleSecond()
		case op == 11:
			return r.toggleSquat()
		}
	}
}

func (r *ownershipRun) deleteParent(name string) string {
	r.delete(name)
	return "delete " + name
}

// reload switches to another rules file.
func (r *ownershipRun) reload() string {
	before := r.Active
	next := before
	for slices.Equal(next, before) {
		next = ruleSets[r.rng.IntN(len(ruleSets))]
	}
	first := r.beforeReload(next)
	r.Active = next
	secondLoads := 0
	if r.second != nil {
		secondLoads = r.second.loads()
	}
	_, hadA := ruleNamed(before, "a")
	_, hasA := ruleNamed(next, "a")
	r.ctrl.rewriteRules(r.t, r.Rules, propertyRules, r)
	if r.second != nil {
		r.second.waitLoaded(r.t, secondLoads)
	}
	if r.squat && hadA && !hasA {
		// The squatter's rule a, refused so far, runs now.
		r.squatting = true
	}
	return fmt.Sprintf("%sreload rules %s -> %s", first, describeRules(before), describeRules(r.Active))
}

func describeRules(rules []propertyRule) string {
	var parts []string
	for _, rule := range rules {
		parts = append(parts, fmt.Sprintf("%s(-%s)", rule.Name, rule.Suffix))
	}
	return strings.Join(parts, "+")
}

// createForeign creates an unlabelled ConfigMap under a free name that a widget may
// compute, in either namespace.
func (r *ownershipRun) createForeign() (string, bool) {
	ns := []string{r.NS, r.Other}[r.rng.IntN(2)]
	name := propertyNames[r.rng.IntN(len(propertyNames))] + "-" + propertySuffixes[r.rng.IntN(len(propertySuffixes))]
	if _, err := kube(r.t).CoreV1().ConfigMaps(ns).Get(r.t.Context(), name, metav1.GetOptions{}); err == nil {
		return "", false
	}
	f := createObject(r.t, configMaps, ns, name, map[string]string{"owner": "someone-else"}, map[string]string{"note": "not kubecel's"}, nil)
	r.foreign = append(r.foreign, f)
	return "create foreign " + f.String(), true
}
