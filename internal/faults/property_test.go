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

	"github.com/kubecel/kubecel/rules"
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
	propertySuffixes = []string{"a", "a2", "b"}
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
// whose new child's name is taken, which keeps its old children meanwhile).
func TestPropertyOwnership(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	steps := 30
	if *long {
		steps = 200
	}
	t.Logf("seed %d, %d steps", seed, steps)
	r := &ownershipRun{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed)), released: map[types.UID]bool{}}
	r.world = newWorldRules(t, "property", rulesHead) // the rules follow, with r's
	r.Active = ruleSets[3]
	r.Rules = writeRules(t, propertyRules, r)
	r.ctrl = startLoaded(t, r.Rules)
	for range steps {
		r.do(r.step())
	}
	for _, name := range r.names() {
		r.do(r.deleteParent(name))
	}
	t.Logf("%d steps, %d foreign objects, %d objects of removed rules", len(r.steps), len(r.foreign), len(r.released))
}

// ownershipRun is one run of TestPropertyOwnership; its world and Active rules are the
// rules template's data.
type ownershipRun struct {
	*world
	Active []propertyRule

	t    *testing.T
	seed uint64
	rng  *rand.Rand
	ctrl *controller
	// foreign holds the objects the run created as another client would.
	foreign []*frozen
	// released holds the objects of rules that were removed (by UID): they may stay,
	// until their rule is back and selects their widget.
	released map[types.UID]bool
	steps    []string
}

// do records a step that has been taken and waits until the cluster is quiet, checking
// the invariants meanwhile.
func (r *ownershipRun) do(step string) {
	r.steps = append(r.steps, step)
	r.t.Logf("step %d: %s", len(r.steps), step)
	var last string
	fingerprint, since := "", time.Now()
	quiet, _ := within(settle, func() (bool, string) {
		s := r.observe()
		if msg := r.safety(s); msg != "" {
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
	for {
		switch op := r.rng.IntN(9); {
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
	for slices.Equal(r.Active, before) {
		r.Active = ruleSets[r.rng.IntN(len(ruleSets))]
	}
	r.ctrl.rewriteRules(r.t, r.Rules, propertyRules, r)
	return fmt.Sprintf("reload rules %s -> %s", describeRules(before), describeRules(r.Active))
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

// snapshot is the state of the run's namespaces.
type snapshot struct {
	parents []*unstructured.Unstructured
	byUID   map[types.UID]*unstructured.Unstructured
	// objects are the ConfigMaps of both namespaces, by namespace/name.
	objects map[string]*unstructured.Unstructured
	// fingerprint changes with any write to a widget or a ConfigMap.
	fingerprint string
}

func (r *ownershipRun) observe() *snapshot {
	ctx := r.t.Context()
	s := &snapshot{byUID: map[types.UID]*unstructured.Unstructured{}, objects: map[string]*unstructured.Unstructured{}}
	var fp strings.Builder
	list, err := dyn(r.t).Resource(widgets).Namespace(r.NS).List(ctx, metav1.ListOptions{})
	if err != nil {
		r.t.Fatalf("list widgets: %v", err)
	}
	for i := range list.Items {
		p := &list.Items[i]
		s.parents = append(s.parents, p)
		s.byUID[p.GetUID()] = p
		fmt.Fprintf(&fp, "%s@%s ", p.GetName(), p.GetResourceVersion())
	}
	for _, ns := range []string{r.NS, r.Other} {
		cms, err := dyn(r.t).Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			r.t.Fatalf("list configmaps: %v", err)
		}
		for i := range cms.Items {
			cm := &cms.Items[i]
			s.objects[ns+"/"+cm.GetName()] = cm
			fmt.Fprintf(&fp, "%s/%s@%s ", ns, cm.GetName(), cm.GetResourceVersion())
		}
	}
	s.fingerprint = fp.String()
	return s
}

// safety returns what is wrong at any time, quiet or not: a foreign object changed, or
// an object that belongs to two widgets.
func (r *ownershipRun) safety(s *snapshot) string {
	for _, f := range r.foreign {
		obj := s.objects[f.Namespace+"/"+f.Name]
		if obj == nil {
			return fmt.Sprintf("foreign %s was deleted", f)
		}
		if diff := untouched(r.t, f); diff != "" {
			return fmt.Sprintf("foreign %s was modified (-before +after):\n%s", f, diff)
		}
	}
	for key, obj := range s.objects {
		controllers, owners := 0, map[types.UID]bool{}
		for _, o := range obj.GetOwnerReferences() {
			if o.Controller != nil && *o.Controller {
				controllers++
			}
			if o.Kind == "Widget" {
				owners[o.UID] = true
			}
		}
		label := types.UID(obj.GetLabels()[rules.LabelParentUID])
		switch {
		case controllers > 1 || len(owners) > 1:
			return fmt.Sprintf("ConfigMap %s has owner references to several widgets: %s", key, ownerList(obj))
		case len(owners) == 1 && label != "" && !owners[label]:
			return fmt.Sprintf("ConfigMap %s is labelled for widget %s but its owner references are %s", key, label, ownerList(obj))
		}
	}
	return ""
}

// liveness returns what is not yet as it must be once the cluster is quiet, or "".
func (r *ownershipRun) liveness(s *snapshot) string {
	for _, p := range s.parents {
		if p.GetDeletionTimestamp() != nil {
			return fmt.Sprintf("widget %s is still deleting, finalizers %v", p.GetName(), p.GetFinalizers())
		}
		for _, f := range p.GetFinalizers() {
			name, ok := strings.CutPrefix(f, "cleanup.kubecel.dev/"+r.Rule+"-")
			if rule, active := r.rule(name); ok && (!active || !rule.selects(p)) {
				return fmt.Sprintf("widget %s keeps the finalizer %s of a rule that does not select it", p.GetName(), f)
			}
		}
		for _, rule := range r.Active {
			if !rule.selects(p) {
				continue
			}
			for _, ns := range []string{r.NS, r.Other} {
				if key := ns + "/" + specName(p) + "-" + rule.Suffix; s.objects[key] == nil {
					return fmt.Sprintf("widget %s has no ConfigMap %s (rule %s), neither its own nor another's", p.GetName(), key, rule.Name)
				}
			}
		}
	}
	for key, obj := range s.objects {
		if msg := r.belongs(s, key, obj); msg != "" {
			return msg
		}
	}
	return ""
}

// belongs returns why a ConfigMap that kubecel labelled should not be there, or "".
func (r *ownershipRun) belongs(s *snapshot, key string, obj *unstructured.Unstructured) string {
	labels := obj.GetLabels()
	if labels[rules.LabelManagedBy] != rules.ManagedByValue {
		return ""
	}
	rule, active := r.rule(strings.TrimPrefix(labels[rules.LabelRule], r.Rule+"-"))
	if !active {
		r.released[obj.GetUID()] = true
		return ""
	}
	p := s.byUID[types.UID(labels[rules.LabelParentUID])]
	if p == nil || !rule.selects(p) {
		if r.released[obj.GetUID()] {
			return ""
		}
		return fmt.Sprintf("ConfigMap %s of rule %s is left behind by widget %s, which is gone or not selected", key, rule.Name, labels[rules.LabelParentUID])
	}
	// The rule is back and selects the widget: the object is its child again, to be
	// pruned when no longer produced and deleted with the widget.
	delete(r.released, obj.GetUID())
	want := map[string]string{r.NS: "local", r.Other: "remote"}[obj.GetNamespace()]
	stale := obj.GetName() != specName(p)+"-"+rule.Suffix || labels[rules.LabelChild] != want
	// Nothing is pruned for a widget whose applies failed: one whose new child's name is
	// taken keeps its old children until it is free.
	if stale && !r.blocked(s, rule, p) {
		return fmt.Sprintf("ConfigMap %s (child %q of rule %s) is left behind by widget %s, which now computes %s-%s",
			key, labels[rules.LabelChild], rule.Name, p.GetName(), specName(p), rule.Suffix)
	}
	return ""
}

// blocked reports whether a name the rule computes for the widget is taken by an
// object that is not that widget's child under the rule.
func (r *ownershipRun) blocked(s *snapshot, rule propertyRule, p *unstructured.Unstructured) bool {
	for _, ns := range []string{r.NS, r.Other} {
		obj := s.objects[ns+"/"+specName(p)+"-"+rule.Suffix]
		if obj == nil {
			continue
		}
		labels := obj.GetLabels()
		if labels[rules.LabelRule] != r.Rule+"-"+rule.Name || labels[rules.LabelParentUID] != string(p.GetUID()) {
			return true
		}
	}
	return false
}

// rule returns the active rule of that name.
func (r *ownershipRun) rule(name string) (propertyRule, bool) {
	for _, rule := range r.Active {
		if rule.Name == name {
			return rule, true
		}
	}
	return propertyRule{}, false
}
