package reconcile

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/rules"
)

// TestResumeFrom: a yielded turn's work left is taken up only when nothing it was
// computed from changed, and only once.
func TestResumeFrom(t *testing.T) {
	st := &watch.Rule{Rule: &rules.Rule{Name: "r"}, ParentKind: watch.Kind{Namespaced: true}}
	other := &watch.Rule{Rule: &rules.Rule{Name: "r"}, ParentKind: watch.Kind{Namespaced: true}}
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
		change func(c *children, st **watch.Rule, p **unstructured.Unstructured, refEvents *uint64)
		want   bool
	}{
		{name: "unchanged", want: true},
		{name: "parent edited", change: func(_ *children, _ **watch.Rule, p **unstructured.Unstructured, _ *uint64) { *p = parent("u1", "11") }},
		{name: "parent replaced", change: func(_ *children, _ **watch.Rule, p **unstructured.Unstructured, _ *uint64) { *p = parent("u2", "10") }},
		{name: "rule reloaded", change: func(_ *children, s **watch.Rule, _ **unstructured.Unstructured, _ *uint64) { *s = other }},
		{name: "a ref changed", change: func(_ *children, _ **watch.Rule, _ **unstructured.Unstructured, n *uint64) { *n++ }},
		{name: "rule stopped", change: func(c *children, _ **watch.Rule, _ **unstructured.Unstructured, _ *uint64) {
			c.memory.forgetRule("r")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &children{memory: newMemory()}
			p := parent("u1", "10")
			c.saveResume(st, p, 0, todo)
			use, events := st, uint64(0)
			if tt.change != nil {
				tt.change(c, &use, &p, &events)
			}
			got := c.resumeFrom(use, p, events)
			if (got != nil) != tt.want {
				t.Fatalf("resumeFrom() = %v, want work left: %v", got, tt.want)
			}
			if again := c.resumeFrom(use, p, events); again != nil {
				t.Errorf("second resumeFrom() = %v; want nil: work left is taken once", again)
			}
		})
	}
}
