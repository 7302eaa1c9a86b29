package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRing(t *testing.T) {
	tests := []struct {
		name string
		body string
		want ringStatus
		ok   bool
	}{
		{"ready", "ok\nring 7: serving 128 of 256 buckets, 2 members\n", ringStatus{version: "7", serving: 128, buckets: 256, members: 2}, true},
		{"hash version", "ring 3f2a9c: serving 256 of 256 buckets, 1 members\n", ringStatus{version: "3f2a9c", serving: 256, buckets: 256, members: 1}, true},
		{"not sharded", "ok\n", ringStatus{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseRing(tt.body)
			if ok != tt.ok {
				t.Fatalf("ok = %t, want %t", ok, tt.ok)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(ringStatus{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRingAgreed(t *testing.T) {
	ring := func(version string, serving, members int) ringStatus {
		return ringStatus{ready: true, version: version, serving: serving, buckets: 256, members: members}
	}
	notReady := ring("1", 128, 2)
	notReady.ready = false
	tests := []struct {
		name  string
		rings []ringStatus
		n     int
		want  bool
	}{
		{"one replica", []ringStatus{ring("1", 256, 1)}, 1, true},
		{"two agree", []ringStatus{ring("4", 120, 2), ring("4", 136, 2)}, 2, true},
		{"versions differ", []ringStatus{ring("4", 120, 2), ring("5", 136, 2)}, 2, false},
		{"a member missing", []ringStatus{ring("4", 256, 1), ring("4", 0, 1)}, 2, false},
		{"buckets served twice", []ringStatus{ring("4", 256, 2), ring("4", 136, 2)}, 2, false},
		{"one not ready", []ringStatus{ring("1", 128, 2), notReady}, 2, false},
		{"one did not answer", []ringStatus{ring("1", 256, 2)}, 2, false},
		{"no ring line", []ringStatus{{ready: true}}, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, state := ringAgreed(tt.rings, tt.n); got != tt.want {
				t.Errorf("ringAgreed = %t, want %t (%s)", got, tt.want, state)
			}
		})
	}
}
