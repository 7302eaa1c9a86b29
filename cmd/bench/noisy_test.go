package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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

// TestNoisyRules: the noisy phase's rules load, the bench rule serves the light
// tenant's namespace too, and the heavy rule makes 1,000 children per parent.
func TestNoisyRules(t *testing.T) {
	data, err := noisyRules()
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
	p := newParent(heavyNS, 0)
	p.SetUID("00000000-0000-0000-0000-000000000001")
	res, err := rs.Rules[1].EvaluateWithRefs(t.Context(), p.Object, rules.Observed{}, settingsSource{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Children) != heavyChildren {
		t.Errorf("heavy parent's children = %d, want %d", len(res.Children), heavyChildren)
	}
}
