package main

import (
	"testing"
	"time"
)

func TestPairsSummary(t *testing.T) {
	s := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	at := func(limit, converge float64) pair { return pair{limit: s(limit), converge: s(converge)} }
	cases := []struct {
		name  string
		pairs []pair
		want  string
	}{
		{name: "one pair", pairs: []pair{at(10, 13)}, want: ""},
		{name: "odd", pairs: []pair{at(10, 13.1), at(10, 10.9), at(8, 9.6)}, want: "1.31x 1.09x 1.20x, median 1.20x"},
		{name: "even", pairs: []pair{at(10, 13), at(10, 11)}, want: "1.30x 1.10x, median 1.20x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := pairsSummary(tc.pairs, pair.convergeRatio); got != tc.want {
				t.Errorf("pairsSummary = %q, want %q", got, tc.want)
			}
		})
	}
}
