package watch

import (
	"testing"

	"github.com/kubecel/kubecel/rules/contract"
	"k8s.io/apimachinery/pkg/labels"
)

func TestBucketSelector(t *testing.T) {
	all := make([]int, contract.Buckets)
	for i := range all {
		all[i] = i
	}
	tests := []struct {
		buckets []int
		want    string
		matches []int
	}{
		{nil, "kubecel.dev/bucket in (none)", nil},
		{[]int{3, 17}, "kubecel.dev/bucket in (3,17)", []int{3, 17}},
		{all, "", all},
	}
	for _, tt := range tests {
		got := bucketSelector(tt.buckets)
		if got != tt.want {
			t.Errorf("bucketSelector(%v) = %q, want %q", tt.buckets, got, tt.want)
		}
		sel, err := labels.Parse(got)
		if err != nil {
			t.Fatalf("bucketSelector(%v) = %q: %v", tt.buckets, got, err)
		}
		for b := range contract.Buckets {
			want := false
			for _, m := range tt.matches {
				want = want || m == b
			}
			if sel.Matches(labels.Set{contract.LabelBucket: contract.BucketLabel(b)}) != want {
				t.Errorf("selector %q matches bucket %d: %v, want %v", got, b, !want, want)
			}
		}
	}
}
