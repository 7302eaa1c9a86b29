package clikit

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// Condition is one metav1.Condition of an object, as the commands print it.
type Condition struct {
	// Type names the condition, such as Ready.
	Type string `json:"type"`
	// Status is True, False or Unknown.
	Status string `json:"status"`
	// Reason is the condition's reason, in CamelCase.
	Reason string `json:"reason,omitempty"`
	// Message says why, for a reader.
	Message string `json:"message,omitempty"`
	// ObservedGeneration is the object's generation the condition was written for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ConditionsOf returns the object's status conditions of the given types, in that order.
func ConditionsOf(obj map[string]any, types ...string) []Condition {
	list, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	var out []Condition
	for _, t := range types {
		for _, c := range list {
			m, _ := c.(map[string]any)
			if m["type"] != t {
				continue
			}
			tc := Condition{Type: t}
			tc.Status, _ = m["status"].(string)
			tc.Reason, _ = m["reason"].(string)
			tc.Message, _ = m["message"].(string)
			tc.ObservedGeneration, _, _ = unstructured.NestedInt64(m, "observedGeneration")
			out = append(out, tc)
		}
	}
	return out
}

// FindCondition returns the condition of type t, or nil.
func FindCondition(list []Condition, t string) *Condition {
	for i := range list {
		if list[i].Type == t {
			return &list[i]
		}
	}
	return nil
}
