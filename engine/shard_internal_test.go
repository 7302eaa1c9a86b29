package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

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
	defer c.life.stopAll()
	selectors := func() []string {
		var out []string
		c.view.Load().each(func(st *watch.Rule) {
			for _, ck := range st.Children {
				out = append(out, ck.Selector())
			}
		})
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
