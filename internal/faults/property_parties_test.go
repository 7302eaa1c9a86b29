package faults

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/kubecel/kubecel/rules/contract"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The other parties of TestPropertyOwnership, besides the widgets' owner and the
// foreign objects of property_test.go:
//
//   - a forger, who writes ConfigMaps that carry kubecel's labels (copying a real
//     child's proof when there is one) for a live widget, in the run's namespaces and in
//     a third one the rules never name;
//   - a second installation of kubecel (its own key) on the same rules file, started
//     and stopped;
//   - a squatter, whose rules ConfigMap (found by the first installation's
//     --rules-configmap-selector) defines a rule of the name of the file's rule a: refused
//     while the file has a, it runs while the file has not, and never takes what the
//     file's rule a made.

// secondInstallation is the --installation of the second kubecel.
const secondInstallation = "second"

// squatSelector selects the squatter's ConfigMap.
const squatSelector = "kubecel.dev/squat=true"

// squatRule is the squatter's rule: rule a's name, its own children.
var squatRule = propertyRule{Name: "a", Suffix: "sq"}

// parties is the state of the other parties of a run.
type parties struct {
	// Forge is the namespace the rules never name.
	Forge string
	// second runs while the second installation does; orphans are the objects it made
	// that stay when it is stopped: nobody may touch them, but garbage collection once
	// their widget is gone.
	second  *controller
	orphans []*frozen
	// squat says whether the squatter's ConfigMap exists, squatting whether its rule
	// runs (the file has no rule a).
	squat, squatting bool
	forged           int
}

// startFirst runs the first installation on the rules file and the squatter's selector.
func (r *ownershipRun) startFirst() *controller {
	ctrl := startKubecelWith(r.t, cp.Kubeconfig, "--rules", r.Rules, "--rules-configmap-selector", r.Forge+"/"+squatSelector)
	ctrl.waitLoaded(r.t, 0)
	return ctrl
}

// forge creates a ConfigMap labelled as a child of a live widget, in any of the three
// namespaces, under a name a widget may compute or another.
func (r *ownershipRun) forge(live []*unstructured.Unstructured) (string, bool) {
	if len(live) == 0 {
		return "", false
	}
	p := live[r.rng.IntN(len(live))]
	rule := []string{"a", "b"}[r.rng.IntN(2)]
	ns := []string{r.NS, r.Other, r.Forge}[r.rng.IntN(3)]
	name := fmt.Sprintf("forged-%d", r.forged)
	if r.rng.IntN(2) == 0 {
		name = propertyNames[r.rng.IntN(len(propertyNames))] + "-" + propertySuffixes[r.rng.IntN(len(propertySuffixes))]
	}
	if _, err := kube(r.t).CoreV1().ConfigMaps(ns).Get(r.t.Context(), name, metav1.GetOptions{}); err == nil {
		return "", false
	}
	r.forged++
	labels := map[string]string{
		contract.LabelManagedBy: contract.ManagedByValue, contract.LabelRule: r.Rule + "-" + rule, contract.LabelParentUID: string(p.GetUID()),
		contract.LabelChild: []string{"local", "remote"}[r.rng.IntN(2)], contract.LabelInstallation: contract.DefaultInstallation,
	}
	ann := map[string]string{contract.AnnotationParent: "faults.kubecel.dev/widgets/" + r.NS + "/" + p.GetName()}
	if proof := r.someProof(); proof != "" {
		ann[contract.AnnotationProof] = proof
	}
	f := createAnnotated(r.t, ns, name, labels, ann)
	r.foreign = append(r.foreign, f)
	return fmt.Sprintf("forge %s as child %s of widget %s (rule %s)", f, labels[contract.LabelChild], p.GetName(), rule), true
}

// someProof returns the proof of one of the first installation's children, if any.
func (r *ownershipRun) someProof() string {
	for _, ns := range []string{r.NS, r.Other} {
		list, err := dyn(r.t).Resource(configMaps).Namespace(ns).List(r.t.Context(), metav1.ListOptions{LabelSelector: contract.LabelInstallation + "=" + contract.DefaultInstallation})
		if err != nil {
			r.t.Fatal(err)
		}
		for _, cm := range list.Items {
			if proof := cm.GetAnnotations()[contract.AnnotationProof]; proof != "" {
				return proof
			}
		}
	}
	return ""
}

// createAnnotated creates a ConfigMap with labels and annotations, as another client.
func createAnnotated(t testing.TB, ns, name string, labels, annotations map[string]string) *frozen {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"forged": "yes"}}}
	obj.SetNamespace(ns)
	obj.SetName(name)
	obj.SetLabels(labels)
	obj.SetAnnotations(annotations)
	got, err := dyn(t).Resource(configMaps).Namespace(ns).Create(t.Context(), obj, metav1.CreateOptions{FieldManager: "forger"})
	if err != nil {
		t.Fatalf("create ConfigMap %s/%s: %v", ns, name, err)
	}
	return freeze(configMaps, got)
}

// toggleSecond starts the second installation, or stops it and freezes what it made.
func (r *ownershipRun) toggleSecond() string {
	if r.second == nil {
		r.orphans = nil // its own again: it prunes and deletes them as their rules say
		r.second = startKubecelWith(r.t, cp.Kubeconfig, "--rules", r.Rules, "--installation", secondInstallation)
		r.second.waitLoaded(r.t, 0)
		return "start the second installation"
	}
	r.second.kill()
	r.second = nil
	for _, ns := range []string{r.NS, r.Other} {
		list, err := dyn(r.t).Resource(configMaps).Namespace(ns).List(r.t.Context(), metav1.ListOptions{LabelSelector: contract.LabelInstallation + "=" + secondInstallation})
		if err != nil {
			r.t.Fatal(err)
		}
		for i := range list.Items {
			if list.Items[i].GetDeletionTimestamp() == nil {
				r.orphans = append(r.orphans, freeze(configMaps, &list.Items[i]))
			}
		}
	}
	return fmt.Sprintf("stop the second installation (%d objects stay)", len(r.orphans))
}

// toggleSquat creates or deletes the squatter's rules ConfigMap.
func (r *ownershipRun) toggleSquat() string {
	cms := kube(r.t).CoreV1().ConfigMaps(r.Forge)
	if r.squat {
		before := r.ctrl.loads()
		if err := cms.Delete(r.t.Context(), "squatter", metav1.DeleteOptions{}); err != nil {
			r.t.Fatal(err)
		}
		r.squat = false
		if r.squatting {
			r.squatting = false
			r.ctrl.waitLoaded(r.t, before)
		}
		return "delete the squatter's rules"
	}
	before, refused := r.ctrl.loads(), r.ctrl.loadFailures()
	squat := r.squatterConfigMap()
	if _, err := cms.Create(r.t.Context(), squat, metav1.CreateOptions{}); err != nil {
		r.t.Fatal(err)
	}
	r.squat = true
	if _, fileHasA := r.rule("a"); fileHasA {
		eventually(r.t, settle, func() (bool, string) {
			return r.ctrl.loadFailures() > refused, "the squatter's duplicate rule was not refused"
		})
		return "create the squatter's rules (refused: the file has rule a)"
	}
	r.squatting = true
	r.ctrl.waitLoaded(r.t, before)
	return "create the squatter's rules (rule a runs from the squatter)"
}

// beforeReload makes way for a reload of the file to active: the squatter goes first
// when the file gets rule a back, as the loader refuses a file that repeats a rule name
// another part holds.
func (r *ownershipRun) beforeReload(active []propertyRule) string {
	if !r.squatting || !slices.ContainsFunc(active, func(p propertyRule) bool { return p.Name == "a" }) {
		return ""
	}
	return r.toggleSquat() + ", then "
}

// partySafety returns what is wrong with the other parties' objects at any time: an
// object the stopped second installation made was written, or deleted while its
// widget lives.
func (r *ownershipRun) partySafety(s *snapshot) string {
	for _, o := range r.orphans {
		obj := s.objects[o.Namespace+"/"+o.Name]
		diff := ""
		switch {
		case obj == nil || obj.GetUID() != o.UID:
			diff = "deleted"
		default:
			diff = untouched(r.t, o)
		}
		if diff == "" || r.collected(o) {
			continue
		}
		return fmt.Sprintf("%s, made by the stopped second installation, was changed (-before +after):\n%s", o, diff)
	}
	return ""
}

// collected reports whether garbage collection may have taken f: its owner widget is
// gone or going (widgetGoing).
func (r *ownershipRun) collected(f *frozen) bool {
	for _, o := range f.OwnerReferences {
		if o.Kind == "Widget" {
			return r.widgetGoing(o.Name, o.UID)
		}
	}
	return false
}

// squatterConfigMap is the squatter's rules: rule a of its own.
func (r *ownershipRun) squatterConfigMap() *corev1.ConfigMap {
	var data strings.Builder
	err := template.Must(template.New("rules").Parse(propertyRules)).Execute(&data, struct {
		*world
		Active []propertyRule
	}{r.world, []propertyRule{squatRule}})
	if err != nil {
		r.t.Fatal(err)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "squatter", Namespace: r.Forge,
		Labels: map[string]string{"kubecel.dev/squat": "true"}}, Data: map[string]string{"rules.yaml": data.String()}}
}

// owner says whose child a kubecel-labelled object claims to be: the installation, and
// the rule, from the file or from the squatter.
func owner(obj *unstructured.Unstructured) (installation string, squatter bool) {
	return obj.GetLabels()[contract.LabelInstallation], strings.HasPrefix(obj.GetAnnotations()[contract.AnnotationOrigin], "configmap ")
}
