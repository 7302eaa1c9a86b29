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

// TestPairsNoteCPU: the note gives the controller's CPU against the clients' per pair,
// and leaves a pair out of the median when either was not measured.
func TestPairsNoteCPU(t *testing.T) {
	r := &results{pairs: []pair{
		{limit: time.Second, converge: time.Second, controllerCPU: 3.6, clientsCPU: 4.0},
		{limit: time.Second, converge: time.Second, controllerCPU: 4.4, clientsCPU: 4.0},
		{limit: time.Second, converge: time.Second, controllerCPU: 4.2, clientsCPU: 0},
	}}
	want := "3 pairs, alternating which goes first: convergence x limit 1.00x 1.00x 1.00x, median 1.00x; controller CPU x clients' CPU 0.90x 1.10x skipped, median 1.00x"
	if got := r.pairsNote(); got != want {
		t.Errorf("pairsNote =\n%q, want\n%q", got, want)
	}
}
