package rules

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules/contract"
)

// This file decides what each rule owns of a parent's status when several rules write
// the status of parents they may both select (see overlap.go): each status field belongs
// to one rule, and each rule has its own Ready and Synced conditions.

const (
	// conditionDomain qualifies the condition types of a rule that shares its parent
	// resource's status with other rules.
	conditionDomain = ".kubecel.dev/"
)

// statusResource returns the group and resource of a rule's parent when the rule writes
// status; ok is false otherwise or when the parent is too broken to say.
func statusResource(r *ruleSource) (gr schema.GroupResource, ok bool) {
	if r.Status == nil || r.Name == "" || r.Parent.Resource == "" {
		return gr, false
	}
	gv, err := schema.ParseGroupVersion(r.Parent.APIVersion)
	if err != nil {
		return gr, false
	}
	return schema.GroupResource{Group: gv.Group, Resource: r.Parent.Resource}, true
}

// checkStatusOwners reports every status field that two rules write on the same parent
// resource, on the later of the two.
func checkStatusOwners(rules []*ruleSource, s scopes, errs *ErrorList) {
	earlier := map[schema.GroupResource][]*ruleSource{}
	for _, r := range rules {
		gr, ok := statusResource(r)
		if !ok {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(r.Status.Fields)) {
			for _, other := range earlier[gr] {
				if _, both := other.Status.Fields[name]; !both || !sourcesMayOverlap(other, r, s.clusterScoped(gr)) {
					continue
				}
				w := where{Rule: r.Name, Field: "status.fields", Path: r.At.Key("status").Key("fields")}.Key(name)
				fail(errs, w, fmt.Sprintf("rules %q and %q both write %s of %s; each field may be written by one rule",
					other.Name, r.Name, path("status").Key(name), gr))
				break
			}
		}
		earlier[gr] = append(earlier[gr], r)
	}
}

// sourcesMayOverlap reports whether some parent may be selected by both rules.
func sourcesMayOverlap(a, b *ruleSource, clusterScoped bool) bool {
	nsA, nsB := a.Parent.Namespaces, b.Parent.Namespaces
	if clusterScoped {
		nsA, nsB = nil, nil // namespaces do not apply to cluster-scoped parents
	}
	return mayOverlap(nsA, nsB, sourceSelector(a.Parent.Selector), sourceSelector(b.Parent.Selector))
}

// setConditionTypes names the conditions of each rule: Ready and Synced, unless another
// rule also writes the status of the same resource and may select the same parents.
func setConditionTypes(rules []*Rule, s scopes) {
	for _, r := range rules {
		r.ReadyCondition, r.SyncedCondition = conditionTypes(r, rules, s)
	}
}

// conditionTypes names the conditions of r, one of rules.
func conditionTypes(r *Rule, rules []*Rule, s scopes) (ready, synced string) {
	if r.HasStatus && sharesStatus(r, rules, s.clusterScoped(r.Parent.GVR.GroupResource())) {
		return r.Name + conditionDomain + contract.ConditionReady, r.Name + conditionDomain + contract.ConditionSynced
	}
	return contract.ConditionReady, contract.ConditionSynced
}

// sharesStatus reports whether another rule writes status on parents r may select.
func sharesStatus(r *Rule, rules []*Rule, clusterScoped bool) bool {
	for _, o := range rules {
		if o == r || !o.HasStatus || o.Parent.GVR.GroupResource() != r.Parent.GVR.GroupResource() {
			continue
		}
		nsR, nsO := r.Parent.Namespaces, o.Parent.Namespaces
		if clusterScoped {
			nsR, nsO = nil, nil
		}
		if mayOverlap(nsR, nsO, r.Parent.Selector, o.Parent.Selector) {
			return true
		}
	}
	return false
}
