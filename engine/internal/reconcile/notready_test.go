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
	n := newMemory()
	t0 := time.Unix(1000, 0)
	a, b := watch.Key{Rule: "r", Namespace: "ns", Name: "a"}, watch.Key{Rule: "r", Namespace: "ns", Name: "b"}
	old := watch.Key{Rule: "removed", Name: "c"}
	n.observeReady(a, false, t0)
	n.observeReady(a, false, t0.Add(time.Minute)) // still not Ready: since t0
	n.observeReady(b, false, t0.Add(2*time.Minute))
	n.observeReady(old, false, t0)
	all := func(watch.Key) bool { return true }

	got := n.notReady([]string{"r", "idle"}, all, t0.Add(10*time.Minute))
	want := []metrics.NotReady{{Rule: "r", Count: 2, Oldest: 10 * time.Minute}, {Rule: "idle"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("read (-want +got):\n%s", d)
	}
	if _, ok := n.m[old]; ok {
		t.Error("a parent of a rule that is not running was kept")
	}

	n.observeReady(a, true, t0.Add(11*time.Minute))
	got = n.notReady([]string{"r"}, func(k watch.Key) bool { return k != b }, t0.Add(12*time.Minute))
	if d := cmp.Diff([]metrics.NotReady{{Rule: "r"}}, got); d != "" {
		t.Errorf("after a Ready and a parent gone (-want +got):\n%s", d)
	}
	if len(n.m) != 0 {
		t.Errorf("left %v", n.m)
	}
}

// TestForget: forgetting a parent drops everything kept about it while it lived, in
// one call, and keeps only the record of a deleted parent whose children are being
// deleted; that one goes once its teardown is done and goneTTL has passed.
func TestForget(t *testing.T) {
	m := newMemory()
	a := watch.Key{Rule: "r", Namespace: "ns", Name: "a"}
	m.update(a, func(p *parentMemo) {
		p.statusless, p.lastFailure, p.notReadySince, p.finalizerSent = "uid-a", "uid-a|ApplyFailed|x", time.Now(), true
		p.resume = &resumePoint{uid: "uid-a"}
	})
	m.forget(a)
	if _, ok := m.m[a]; ok {
		t.Errorf("forget kept %+v", *m.m[a])
	}

	m.addGone(a, &goneParent{uid: "uid-a"})
	m.update(a, func(p *parentMemo) { p.lastFailure = "uid-a|x|y" })
	m.forget(a)
	got := m.view(a)
	if got.live() || got.gone == nil || got.gone.uid != "uid-a" {
		t.Errorf("after forget: %+v; want only the teardown record", got)
	}
	m.finishGone(a, "uid-a")
	m.m[a].gone.done = time.Now().Add(-2 * goneTTL)
	m.swept = time.Time{}
	m.addGone(watch.Key{Rule: "r", Name: "b"}, &goneParent{uid: "uid-b"})
	if _, ok := m.m[a]; ok {
		t.Error("a teardown done long ago is still remembered")
	}
}
