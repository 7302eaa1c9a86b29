package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/rules"
)

func TestQuantile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100 .. 1, unsorted
	}
	tests := []struct {
		name  string
		times []time.Duration
		q     float64
		want  time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"median of four is the second", ms(4, 1, 3, 2), 0.5, 2 * time.Millisecond},
		{"p99 of 100 is the 99th", ms(hundred...), 0.99, 99 * time.Millisecond},
		{"p99 of 10 is the largest", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.99, 10 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := quantile(tt.times, tt.q); got != tt.want {
				t.Errorf("quantile(%v, %v) = %v, want %v", tt.times, tt.q, got, tt.want)
			}
		})
	}
}

// TestNoisyRules: the noisy phase's rules load in every shape, the bench rule serves the
// light tenant's namespace too, and the heavy rule makes the shape's children per parent,
// in the parent's namespace or, for cluster-scoped parents, in the heavy namespace; the
// heavy tenant has 16,000 children in every shape.
func TestNoisyRules(t *testing.T) {
	for _, shape := range noisyShapes {
		t.Run(shape.name, func(t *testing.T) {
			data, err := noisyRules(shape)
			if err != nil {
				t.Fatal(err)
			}
			rs, err := rules.Load(data, rules.Options{})
			if err != nil {
				t.Fatalf("%v\n%s", err, data)
			}
			var names []string
			for _, r := range rs.Rules {
				names = append(names, r.Name)
			}
			if diff := cmp.Diff([]string{"bench", "heavy"}, names); diff != "" {
				t.Fatalf("rules (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{benchNS, lightNS}, rs.Rules[0].Parent.Namespaces); diff != "" {
				t.Errorf("bench rule's namespaces (-want +got):\n%s", diff)
			}
			if shape.total() != 16000 {
				t.Errorf("%d heavy children, want 16,000 in every shape", shape.total())
			}
			last := shape.parents - 1
			ns := ""
			if !shape.cluster {
				ns = shape.namespaces[last%len(shape.namespaces)]
				if !rs.Rules[1].Selects(ns, true, nil) {
					t.Errorf("the heavy rule does not select namespace %s", ns)
				}
			}
			p := newParent(ns, last)
			p.SetUID("00000000-0000-0000-0000-000000000001")
			res, err := rs.Rules[1].EvaluateWithRefs(t.Context(), p.Object, rules.Observed{}, settingsSource{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Children) != shape.children {
				t.Fatalf("heavy parent's children = %d, want %d", len(res.Children), shape.children)
			}
			// A namespaced parent's children are in its namespace (the template sets none);
			// a cluster-scoped parent's in the heavy namespace.
			want := ""
			if shape.cluster {
				want = heavyNS
			}
			if got, _, _ := unstructured.NestedString(res.Children[0].Object, "metadata", "namespace"); got != want {
				t.Errorf("heavy child's template namespace %q, want %q", got, want)
			}
		})
	}
}

// TestShapeNamed: --noisy-shape takes the shapes' names, and says which they are.
func TestShapeNamed(t *testing.T) {
	for _, s := range noisyShapes {
		if got, err := shapeNamed(s.name); err != nil || got.name != s.name {
			t.Errorf("shapeNamed(%q) = %q, %v", s.name, got.name, err)
		}
	}
	if _, err := shapeNamed("spread"); err == nil || err.Error() != `--noisy-shape "spread": want one of one-namespace, namespaces, cluster` {
		t.Errorf("shapeNamed(spread): %v", err)
	}
}
