package faults

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kubecel/kubecel/rules/contract"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// What TestPropertyOwnership checks after each step: what must hold at any time
// (safety), and once the cluster is quiet (liveness).

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
	for _, ns := range []string{r.NS, r.Other, r.Forge} {
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
		label := types.UID(obj.GetLabels()[contract.LabelParentUID])
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
			if rule, active := ruleNamed(r.running(), name); ok && (!active || !rule.selects(p)) {
				return fmt.Sprintf("widget %s keeps the finalizer %s of a rule that does not select it", p.GetName(), f)
			}
		}
		for _, rule := range r.running() {
			if !rule.selects(p) {
				continue
			}
			for _, ns := range []string{r.NS, r.Other} {
				key := ns + "/" + specName(p) + "-" + rule.Suffix
				obj := s.objects[key]
				if obj == nil {
					return fmt.Sprintf("widget %s has no ConfigMap %s (rule %s), neither its own nor another's", p.GetName(), key, rule.Name)
				}
				if _, msg := (holders{r}).holder(p, rule, key, obj); msg != "" {
					return msg
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
// The objects of a stopped second installation, and those the forger made, are not
// kubecel's to prune; each installation's own are judged by its rules.
func (r *ownershipRun) belongs(s *snapshot, key string, obj *unstructured.Unstructured) string {
	labels := obj.GetLabels()
	if labels[contract.LabelManagedBy] != contract.ManagedByValue || r.isForeign(key) {
		return ""
	}
	installation, squatter := owner(obj)
	if installation == secondInstallation && r.second == nil {
		return "" // an orphan: partySafety watches it
	}
	name := strings.TrimPrefix(labels[contract.LabelRule], r.Rule+"-")
	rule, active := r.rule(name)
	if squatter {
		rule, active = squatRule, r.squatting && installation == contract.DefaultInstallation && name == squatRule.Name
	}
	if !active {
		if _, known := r.released[obj.GetUID()]; !known {
			r.released[obj.GetUID()] = releasedObject{key: key, widget: types.UID(labels[contract.LabelParentUID]), rule: name, squatter: squatter,
				widgetName: nameOf(s.byUID[types.UID(labels[contract.LabelParentUID])])}
		}
		return ""
	}
	p := s.byUID[types.UID(labels[contract.LabelParentUID])]
	if p == nil && installation == secondInstallation {
		// The two installations share the rule's finalizer: a parent deleted while the
		// second was stopped leaves its children in other namespaces behind (see
		// docs/operations.md, Installations never touch each other's children).
		return ""
	}
	if p == nil || !rule.selects(p) {
		if _, released := r.released[obj.GetUID()]; released {
			return ""
		}
		return fmt.Sprintf("ConfigMap %s of rule %s (installation %s, squatter: %v) is left behind by widget %s, which is gone or not selected", key, rule.Name, installation, squatter, labels[contract.LabelParentUID])
	}
	// The rule is back and selects the widget: the object is its child again, to be
	// pruned when no longer produced and deleted with the widget.
	delete(r.released, obj.GetUID())
	want := map[string]string{r.NS: "local", r.Other: "remote"}[obj.GetNamespace()]
	stale := obj.GetName() != specName(p)+"-"+rule.Suffix || labels[contract.LabelChild] != want
	// Nothing is pruned for a widget whose applies failed: one whose new child's name is
	// taken keeps its old children until it is free.
	if stale && !r.blocked(s, rule, p, installation, squatter) {
		return fmt.Sprintf("ConfigMap %s (child %q of rule %s) is left behind by widget %s, which now computes %s-%s",
			key, labels[contract.LabelChild], rule.Name, p.GetName(), specName(p), rule.Suffix)
	}
	return ""
}

// blocked reports whether a name the rule computes for the widget is taken by an
// object that is not that widget's child under the rule of that installation and
// origin.
func (r *ownershipRun) blocked(s *snapshot, rule propertyRule, p *unstructured.Unstructured, installation string, squatter bool) bool {
	for _, ns := range []string{r.NS, r.Other} {
		key := ns + "/" + specName(p) + "-" + rule.Suffix
		obj := s.objects[key]
		if obj == nil {
			continue
		}
		labels := obj.GetLabels()
		inst, sq := owner(obj)
		if r.isForeign(key) || inst != installation || sq != squatter ||
			labels[contract.LabelRule] != r.Rule+"-"+rule.Name || labels[contract.LabelParentUID] != string(p.GetUID()) {
			return true
		}
	}
	return false
}

// isForeign reports whether the object at key is one the run made as another client.
func (r *ownershipRun) isForeign(key string) bool {
	return slices.ContainsFunc(r.foreign, func(f *frozen) bool { return f.Namespace+"/"+f.Name == key })
}

// running are the rules the first installation runs: the file's, and the squatter's
// while the file has no rule a.
func (r *ownershipRun) running() []propertyRule {
	if r.squatting {
		return append(slices.Clone(r.Active), squatRule)
	}
	return r.Active
}

// releasedObject is an object of a removed rule, as first seen.
type releasedObject struct {
	key        string
	widget     types.UID
	widgetName string // "" when the widget was already gone
	rule       string
	squatter   bool
}

// nameOf is p's name, "" for nil.
func nameOf(p *unstructured.Unstructured) string {
	if p == nil {
		return ""
	}
	return p.GetName()
}

// releasedSafety returns what is wrong at any time with the objects of removed rules:
// one deleted while its widget lives and its rule is still removed. Nobody may prune
// them: not the rules that run, not a rule of the same name from another source.
func (r *ownershipRun) releasedSafety(s *snapshot) string {
	for uid, o := range r.released {
		if obj := s.objects[o.key]; obj != nil && obj.GetUID() == uid {
			continue
		}
		_, back := r.rule(o.rule)
		if o.squatter {
			back = r.squatting && o.rule == squatRule.Name
		}
		if s.byUID[o.widget] != nil && !back && !r.widgetGoing(o.widgetName, o.widget) {
			return fmt.Sprintf("ConfigMap %s of removed rule %s (squatter: %v) was deleted while its widget lives", o.key, o.rule, o.squatter)
		}
		delete(r.released, uid)
	}
	return ""
}

// rule returns the file's active rule of that name.
func (r *ownershipRun) rule(name string) (propertyRule, bool) {
	return ruleNamed(r.Active, name)
}

// ruleNamed returns the rule of that name in rules.
func ruleNamed(rules []propertyRule, name string) (propertyRule, bool) {
	for _, rule := range rules {
		if rule.Name == name {
			return rule, true
		}
	}
	return propertyRule{}, false
}

// widgetGoing reports whether the widget of that name and UID is gone or being deleted,
// read now: garbage collection may take its children at any time then, also between
// the snapshot's list of widgets and its list of ConfigMaps.
func (r *ownershipRun) widgetGoing(name string, uid types.UID) bool {
	if name == "" {
		return true
	}
	w, err := r.widget(name)
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return w.GetUID() != uid || w.GetDeletionTimestamp() != nil
}
