package reconcile

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubecel/kubecel/engine/internal/metrics"
	"github.com/kubecel/kubecel/engine/internal/watch"
)

// TestNotReadyRead: a parent counts from its first not-Ready reconcile until a Ready
// one, and a scrape drops the parents that are no longer live and those of rules that
// are not running.
func TestNotReadyRead(t *testing.T) {
	n := newNotReady()
	t0 := time.Unix(1000, 0)
	a, b := watch.Key{Rule: "r", Namespace: "ns", Name: "a"}, watch.Key{Rule: "r", Namespace: "ns", Name: "b"}
	old := watch.Key{Rule: "removed", Name: "c"}
	n.observe(a, false, t0)
	n.observe(a, false, t0.Add(time.Minute)) // still not Ready: since t0
	n.observe(b, false, t0.Add(2*time.Minute))
	n.observe(old, false, t0)
	all := func(watch.Key) bool { return true }

	got := n.read([]string{"r", "idle"}, all, t0.Add(10*time.Minute))
	want := []metrics.NotReady{{Rule: "r", Count: 2, Oldest: 10 * time.Minute}, {Rule: "idle"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("read (-want +got):\n%s", d)
	}
	if _, ok := n.since[old]; ok {
		t.Error("a parent of a rule that is not running was kept")
	}

	n.observe(a, true, t0.Add(11*time.Minute))
	got = n.read([]string{"r"}, func(k watch.Key) bool { return k != b }, t0.Add(12*time.Minute))
	if d := cmp.Diff([]metrics.NotReady{{Rule: "r"}}, got); d != "" {
		t.Errorf("after a Ready and a parent gone (-want +got):\n%s", d)
	}
	if len(n.since) != 0 {
		t.Errorf("left %v", n.since)
	}
}
