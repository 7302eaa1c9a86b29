package contract

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBucket(t *testing.T) {
	tests := []struct {
		namespace, name string
		want            int
	}{
		// FNV-1a (32 bits) of "namespace/name", modulo 256: computed independently.
		{"team", "shop", 37},
		{"", "all", 45},
		{"default", "a", 38},
		{"default", "b", 147},
	}
	for _, tt := range tests {
		if got := Bucket(tt.namespace, tt.name); got != tt.want {
			t.Errorf("Bucket(%q, %q) = %d, want %d", tt.namespace, tt.name, got, tt.want)
		}
	}
}

// TestBucketSpread checks that parents named alike spread over every bucket, evenly
// enough for a replica's share to follow its share of buckets.
func TestBucketSpread(t *testing.T) {
	const n = 100 * Buckets
	counts := make([]int, Buckets)
	for i := range n {
		counts[Bucket("ns", "webapp-"+BucketLabel(i))]++
	}
	var empty []int
	for b, c := range counts {
		if c < 50 || c > 150 {
			empty = append(empty, b)
		}
	}
	if diff := cmp.Diff([]int(nil), empty); diff != "" {
		t.Errorf("buckets with fewer than half or more than 1.5 times their share of %d parents (-want +got):\n%s", n, diff)
	}
}
