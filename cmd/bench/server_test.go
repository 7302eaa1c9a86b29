package main

import "testing"

func TestServerCountsString(t *testing.T) {
	s := serverCounts{"APPLY configmaps": 1000, "GET /api": 8, "watch events configmaps": 2000, "watch events nodes": 7,
		"watch event bytes configmaps": 21169616, "watch event bytes nodes": 708}
	want := "watch event bytes configmaps 21.2 MB, watch events configmaps 2000, APPLY configmaps 1000"
	if got := s.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
