package faults

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kubecel/kubecel/rules/contract"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Who holds the names a widget computes, once the cluster is quiet: the widget itself,
// with a child that is its own in every part the controller writes, or someone whose
// object the controller must leave alone.

// Holders of a computed name, counted per run (see holders.held).
const (
	heldOwn          = "its own child"
	heldForeign      = "a foreign or forged object"
	heldOtherWidget  = "another widget's child"
	heldSecond       = "the second installation's child"
	heldSquatter     = "the squatter's child"
	heldReleasedRule = "its child of a removed rule"
)

// holders judges who holds the names the widgets of a run compute.
type holders struct{ *ownershipRun }

// holder returns who holds the name key that rule computes for p, and what is wrong
// with it, or "". A child the widget holds is its own: labelled with its UID and the
// child id of its namespace, its data naming the widget, and in the widget's namespace
// controlled by the widget (an owner reference with its UID), elsewhere owned by no
// widget (owner references do not cross namespaces).
func (r holders) holder(p *unstructured.Unstructured, rule propertyRule, key string, obj *unstructured.Unstructured) (string, string) {
	if r.isForeign(key) {
		return heldForeign, ""
	}
	labels := obj.GetLabels()
	if labels[contract.LabelManagedBy] != contract.ManagedByValue {
		return "", fmt.Sprintf("ConfigMap %s, computed by widget %s (rule %s), is not kubecel's and no other client made it: labels %v", key, p.GetName(), rule.Name, labels)
	}
	if labels[contract.LabelParentUID] != string(p.GetUID()) {
		return heldOtherWidget, "" // belongs judges it
	}
	kind := heldOwn
	installation, squatter := owner(obj)
	switch {
	case installation == secondInstallation:
		kind = heldSecond
	case squatter != (rule == squatRule):
		kind = heldSquatter
	case r.releasedObject(obj.GetUID()):
		kind = heldReleasedRule
	}
	wantID, wantOwner := "local", string(p.GetUID())
	if obj.GetNamespace() != r.NS {
		wantID, wantOwner = "remote", ""
	}
	var widgetOwners []string
	for _, o := range obj.GetOwnerReferences() {
		if o.Kind == "Widget" && o.Controller != nil && *o.Controller {
			widgetOwners = append(widgetOwners, string(o.UID))
		}
	}
	data, _, _ := unstructured.NestedString(obj.Object, "data", "parent")
	switch {
	case labels[contract.LabelChild] != wantID:
		return kind, fmt.Sprintf("ConfigMap %s (%s of widget %s) is child %q, want %q", key, kind, p.GetName(), labels[contract.LabelChild], wantID)
	case data != p.GetName():
		return kind, fmt.Sprintf("ConfigMap %s (%s of widget %s) has data.parent %q, want %q", key, kind, p.GetName(), data, p.GetName())
	case strings.Join(widgetOwners, ",") != wantOwner:
		return kind, fmt.Sprintf("ConfigMap %s (%s of widget %s, uid %s) is controlled by widgets %v, want %q", key, kind, p.GetName(), p.GetUID(), widgetOwners, wantOwner)
	}
	return kind, ""
}

// releasedObject reports whether uid is an object of a removed rule.
func (r holders) releasedObject(uid types.UID) bool {
	_, ok := r.released[uid]
	return ok
}

// held counts, in a quiet snapshot, who holds each name a running rule computes for a
// selected widget, into r.holders: which situations a seed reaches (logged at the end of
// the run, and how the known seeds were chosen).
func (r holders) held(s *snapshot) {
	for _, p := range s.parents {
		for _, rule := range r.running() {
			if !rule.selects(p) {
				continue
			}
			for _, ns := range []string{r.NS, r.Other} {
				key := ns + "/" + specName(p) + "-" + rule.Suffix
				if obj := s.objects[key]; obj != nil {
					kind, _ := r.holder(p, rule, key, obj)
					r.holders[kind]++
				}
			}
		}
	}
}

// describeHolders lists the counts of r.holders.
func (r holders) describeHolders() string {
	var parts []string
	for _, kind := range slices.Sorted(maps.Keys(r.holders)) {
		parts = append(parts, fmt.Sprintf("%s %d", kind, r.holders[kind]))
	}
	return strings.Join(parts, ", ")
}
