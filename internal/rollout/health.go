package rollout

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/rules/contract"
)

// RevisionOf is the revision of rule a parent is at, as the rule recorded it on the
// parent (contract.RevisionAnnotation); "" when it recorded none.
func RevisionOf(parent *unstructured.Unstructured, rule string) string {
	return parent.GetAnnotations()[contract.RevisionAnnotation(rule)]
}

// At reports whether a parent is at revision hash of rule: the rule recorded that
// revision on it, and its Synced condition (of type syncedType) is True at the parent's
// generation.
func At(parent *unstructured.Unstructured, rule, syncedType, hash string) bool {
	c := condition(parent, syncedType)
	return c != nil && c["status"] == "True" && observed(parent, c) && RevisionOf(parent, rule) == hash
}

// Unrecorded reports whether a parent's Synced condition (of type syncedType) is True at
// its generation while the rule recorded no revision on it: what a rule without a
// rollout policy leaves.
func Unrecorded(parent *unstructured.Unstructured, rule, syncedType string) bool {
	c := condition(parent, syncedType)
	return c != nil && c["status"] == "True" && observed(parent, c) && RevisionOf(parent, rule) == ""
}

// ParentHealth says why a parent of a step is not healthy for revision hash of rule, or
// "" when it is: at the revision (At) and its Ready condition True at its generation.
func ParentHealth(parent *unstructured.Unstructured, rule, readyType, syncedType, hash string) string {
	synced := condition(parent, syncedType)
	switch {
	case synced == nil || !observed(parent, synced):
		return "not reconciled at revision " + hash + " yet"
	case synced["status"] != "True":
		return fmt.Sprintf("%s is %v: %s", syncedType, synced["status"], str(synced["message"]))
	case RevisionOf(parent, rule) != hash:
		return "not reconciled at revision " + hash + " yet"
	}
	ready := condition(parent, readyType)
	switch {
	case ready == nil || !observed(parent, ready):
		return readyType + " not reported yet"
	case ready["status"] != "True":
		return fmt.Sprintf("%s is %v: %s", readyType, ready["status"], str(ready["message"]))
	}
	return ""
}

func condition(parent *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(parent.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// observed reports whether a condition was written for the parent's generation.
func observed(parent *unstructured.Unstructured, c map[string]any) bool {
	g, ok := c["observedGeneration"].(int64)
	if !ok {
		if f, isFloat := c["observedGeneration"].(float64); isFloat {
			g, ok = int64(f), true
		}
	}
	return ok && g == parent.GetGeneration()
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
