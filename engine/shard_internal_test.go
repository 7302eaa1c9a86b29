package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

func TestBucketSelector(t *testing.T) {
	all := make([]int, rules.Buckets)
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
		for b := range rules.Buckets {
			want := false
			for _, m := range tt.matches {
				want = want || m == b
			}
			if sel.Matches(labels.Set{rules.LabelBucket: rules.BucketLabel(b)}) != want {
				t.Errorf("selector %q matches bucket %d: %v, want %v", got, b, !want, want)
			}
		}
	}
}

// everyBucket is a Shard that serves every bucket.
type everyBucket struct{}

func (everyBucket) Begin(int) (func(), bool) { return func() {}, true }
func (everyBucket) Serves(int) bool          { return true }

// TestWatchBucketsAfterAFailedSync: a WatchBuckets whose sync fails keeps the running
// informers, and asking for the same buckets again then watches them (it is not taken
// for done).
func TestWatchBucketsAfterAFailedSync(t *testing.T) {
	c, err := New(testenv.Config(t), Options{Shard: everyBucket{}, Identity: testIdentity})
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t)
	rs, err := rules.Load(fmt.Appendf(nil, panicRules, fmt.Sprintf("buckets-%04x", rand.IntN(1<<16)), ns), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c.SetRules(ctx, rs)
	defer c.stopAll()
	selectors := func() []string {
		c.mu.RLock()
		defer c.mu.RUnlock()
		var out []string
		for _, st := range c.rules {
			for _, ck := range st.children {
				out = append(out, ck.watch.Key().Selector)
			}
		}
		return out
	}
	over, stop := context.WithCancel(ctx)
	stop()
	if err := c.WatchBuckets(over, []int{5}); err == nil {
		t.Fatal("WatchBuckets with an ended context succeeded")
	}
	for _, sel := range selectors() {
		if !strings.HasSuffix(sel, "kubecel.dev/bucket in (none)") {
			t.Errorf("after a failed sync a child informer selects %q, want the buckets it had (none)", sel)
		}
	}
	if err := c.WatchBuckets(ctx, []int{5}); err != nil {
		t.Fatal(err)
	}
	got := selectors()
	if len(got) == 0 {
		t.Fatal("the rule has no child informer")
	}
	for _, sel := range got {
		if !strings.HasSuffix(sel, "kubecel.dev/bucket in (5)") {
			t.Errorf("a child informer selects %q, want bucket 5", sel)
		}
	}
}
