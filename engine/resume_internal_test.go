package engine

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/rules"
)

// TestResumeFrom: a yielded turn's work left is taken up only when nothing it was
// computed from changed, and only once.
func TestResumeFrom(t *testing.T) {
	st := &ruleState{rule: &rules.Rule{Name: "r"}, parent: kindInfo{Namespaced: true}}
	other := &ruleState{rule: &rules.Rule{Name: "r"}, parent: kindInfo{Namespaced: true}}
	parent := func(uid, version string) *unstructured.Unstructured {
		p := &unstructured.Unstructured{}
		p.SetNamespace("ns")
		p.SetName("p")
		p.SetUID(types.UID(uid))
		p.SetResourceVersion(version)
		return p
	}
	todo := []rules.Desired{{ID: "part", Index: 7}}
	tests := []struct {
		name   string
		change func(c *Controller, st **ruleState, p **unstructured.Unstructured)
		want   bool
	}{
		{name: "unchanged", want: true},
		{name: "parent edited", change: func(_ *Controller, _ **ruleState, p **unstructured.Unstructured) { *p = parent("u1", "11") }},
		{name: "parent replaced", change: func(_ *Controller, _ **ruleState, p **unstructured.Unstructured) { *p = parent("u2", "10") }},
		{name: "rule reloaded", change: func(_ *Controller, s **ruleState, _ **unstructured.Unstructured) { *s = other }},
		{name: "a ref changed", change: func(_ *Controller, s **ruleState, _ **unstructured.Unstructured) { (*s).refIndex.events.Add(1) }},
		{name: "rule stopped", change: func(c *Controller, _ **ruleState, _ **unstructured.Unstructured) { c.resume.dropRule("r") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Controller{resume: newResumePoints()}
			st.refIndex.events.Store(0)
			p := parent("u1", "10")
			c.saveResume(st, p, 0, todo)
			use := st
			if tt.change != nil {
				tt.change(c, &use, &p)
			}
			got := c.resumeFrom(use, p)
			if (got != nil) != tt.want {
				t.Fatalf("resumeFrom() = %v, want work left: %v", got, tt.want)
			}
			if again := c.resumeFrom(use, p); again != nil {
				t.Errorf("second resumeFrom() = %v; want nil: work left is taken once", again)
			}
		})
	}
}
