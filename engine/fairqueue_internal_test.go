package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubecel/kubecel/engine/internal/metrics"
)

// key is a queue key for parent name in namespace ns ("" for a cluster-scoped parent).
func key(ns, name string) queueKey { return queueKey{Rule: "r", Namespace: ns, Name: name} }

func short(k queueKey) string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// TestFairQueueOrder: a free worker takes the head of the flow with the fewest
// reconciles running, ties round robin, so one busy namespace cannot hold back another.
func TestFairQueueOrder(t *testing.T) {
	type step struct {
		push   []queueKey // pushed first
		pop    int        // then popped this many times (recorded)
		finish []queueKey // then finished
	}
	tests := []struct {
		name  string
		steps []step
		want  []string
	}{
		{
			name:  "one flow is a FIFO",
			steps: []step{{push: []queueKey{key("a", "1"), key("a", "2"), key("a", "3")}, pop: 3}},
			want:  []string{"a/1", "a/2", "a/3"},
		},
		{
			name: "a late namespace goes before a busy one's backlog",
			steps: []step{
				{push: []queueKey{key("heavy", "1"), key("heavy", "2"), key("heavy", "3"), key("heavy", "4")}, pop: 2},
				{push: []queueKey{key("light", "1")}, pop: 1},
			},
			want: []string{"heavy/1", "heavy/2", "light/1"},
		},
		{
			name: "ties go round robin",
			steps: []step{{push: []queueKey{
				key("a", "1"), key("a", "2"), key("b", "1"), key("b", "2"), key("c", "1"), key("c", "2"),
			}, pop: 6}},
			want: []string{"a/1", "b/1", "c/1", "a/2", "b/2", "c/2"},
		},
		{
			name: "a flow with fewer running goes first",
			steps: []step{
				{push: []queueKey{key("a", "1"), key("a", "2"), key("b", "1")}, pop: 2},
				{push: []queueKey{key("b", "2"), key("b", "3")}, finish: []queueKey{key("a", "1")}},
				// a runs none, b runs one: a's key, then b's.
				{pop: 3},
			},
			want: []string{"a/1", "b/1", "a/2", "b/2", "b/3"},
		},
		{
			name: "a fresh flow goes before the round",
			steps: []step{
				{push: []queueKey{key("a", "1"), key("a", "2"), key("b", "1"), key("b", "2")}, pop: 2},
				{finish: []queueKey{key("a", "1"), key("b", "1")}, push: []queueKey{key("c", "1")}, pop: 1},
			},
			want: []string{"a/1", "b/1", "c/1"},
		},
		{
			name: "fresh flows go oldest first",
			steps: []step{
				{push: []queueKey{key("a", "1"), key("a", "2")}, pop: 1},
				{push: []queueKey{key("c", "1"), key("b", "1")}, pop: 3},
			},
			want: []string{"a/1", "c/1", "b/1", "a/2"},
		},
		{
			name: "a flow that runs is not fresh",
			steps: []step{
				{push: []queueKey{key("a", "1"), key("b", "1"), key("b", "2")}, pop: 2},
				// a's key is queued again while it runs (it yielded): a goes to the
				// back of the round, behind b.
				{push: []queueKey{key("a", "1")}, finish: []queueKey{key("a", "1"), key("b", "1")}, pop: 2},
			},
			want: []string{"a/1", "b/1", "b/2", "a/1"},
		},
		{
			name: "a yielded key goes to the back of its flow",
			steps: []step{
				{push: []queueKey{key("a", "big"), key("a", "small")}, pop: 1},
				{push: []queueKey{key("a", "big")}, finish: []queueKey{key("a", "big")}, pop: 2},
			},
			want: []string{"a/big", "a/small", "a/big"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newFairQueue()
			var got []string
			for _, s := range tt.steps {
				for _, k := range s.push {
					q.Push(k)
				}
				for _, k := range s.finish {
					q.finished(k)
				}
				for range s.pop {
					if q.Len() == 0 {
						t.Fatalf("queue empty after %v", got)
					}
					got = append(got, short(q.Pop()))
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFairQueueForgets: a flow with nothing waiting or running is forgotten, so the
// queue's memory follows its keys, not every namespace it ever saw.
func TestFairQueueForgets(t *testing.T) {
	q := newFairQueue()
	for i := range 100 {
		q.Push(key(fmt.Sprintf("ns%d", i), "p"))
	}
	for q.Len() > 0 {
		q.finished(q.Pop())
	}
	if len(q.flows) != 0 || len(q.fresh) != 0 || len(q.old) != 0 || len(q.running) != 0 {
		t.Errorf("after every key finished: %d flows, %d fresh, %d in the round, %d running; want none", len(q.flows), len(q.fresh), len(q.old), len(q.running))
	}
}

// TestQueueFair: the controller's queue (client-go's workqueue around fairQueue) hands a
// light namespace's key to the next free worker while a heavy one has a backlog, and
// reports the flows in its metrics.
func TestQueueFair(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	fair := newFairQueue()
	clock := time.Unix(0, 0)
	fair.now = func() time.Time { return clock }
	q := newQueue(fair, m)
	defer q.ShutDown()
	if err := m.RegisterFlows(fair.snapshot); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		q.Add(key("heavy", fmt.Sprint(i)))
	}
	take := func() queueKey {
		k, quit := q.Get()
		if quit {
			t.Fatal("queue shut down")
		}
		return k
	}
	running := take()
	clock = clock.Add(2 * time.Second)
	q.Add(key("light", "a"))
	if got := take(); got != key("light", "a") {
		t.Errorf("next key = %s, want light/a ahead of heavy's backlog", short(got))
	}
	// A key added while it runs comes back at the back of its flow when done.
	q.Add(running)
	q.Done(running)
	fair.finished(running)
	var rest []string
	for q.Len() > 0 {
		k := take()
		rest = append(rest, short(k))
	}
	want := []string{"heavy/1", "heavy/2", "heavy/3", "heavy/4", "heavy/5", "heavy/6", "heavy/7", "heavy/8", "heavy/9", "heavy/0"}
	if diff := cmp.Diff(want, rest); diff != "" {
		t.Errorf("heavy's keys (-want +got):\n%s", diff)
	}
	got := gatheredGauges(t, reg, "kubecel_queue_flow_running", "kubecel_queue_flows")
	wantGauges := map[string]float64{
		"kubecel_queue_flows":                                         2,
		"kubecel_queue_flow_running{flow=heavy}":                      10,
		"kubecel_queue_flow_running{flow=light}":                      1,
		"kubecel_queue_flow_running{flow=" + metrics.OtherFlows + "}": 0,
	}
	if diff := cmp.Diff(wantGauges, got); diff != "" {
		t.Errorf("flow metrics (-want +got):\n%s", diff)
	}
}

// gatheredGauges returns the gauges of reg with these names, by "name{label=value}".
func gatheredGauges(t *testing.T, reg *prometheus.Registry, names ...string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, name := range names {
			if f.GetName() != name {
				continue
			}
			for _, m := range f.GetMetric() {
				k := name
				for _, l := range m.GetLabel() {
					k += "{" + l.GetName() + "=" + l.GetValue() + "}"
				}
				out[k] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// TestFairQueueLimit: a flow runs at most limit reconciles at once, so a worker stays
// free for a key of another flow: while the heavy flow runs its limit, its backlog is not
// counted as ready (a worker asking waits), a light key is taken at once, and the heavy
// flow's next key is ready again as soon as one of its reconciles ends. A flow alone runs
// its limit and no more; without a limit (fewer than four workers) it runs them all.
func TestFairQueueLimit(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	fair := newFairQueue()
	fair.limit = 3
	q := newQueue(fair, m)
	defer q.ShutDown()
	for i := range 10 {
		q.Add(key("heavy", fmt.Sprint(i)))
	}
	take := func() queueKey {
		t.Helper()
		if q.Len() == 0 {
			t.Fatal("no key ready: Get would wait")
		}
		k, quit := q.Get()
		if quit {
			t.Fatal("queue shut down")
		}
		return k
	}
	var running []queueKey
	for range 3 {
		running = append(running, take())
	}
	if n := q.Len(); n != 0 || fair.waiting() != 7 {
		t.Fatalf("heavy at its limit: %d keys ready, %d waiting; want 0 ready of 7 waiting", n, fair.waiting())
	}
	q.Add(key("light", "a"))
	if got := take(); got != key("light", "a") {
		t.Errorf("next key = %s, want light/a", short(got))
	}
	q.Done(running[0])
	fair.finished(running[0])
	if got := take(); got != key("heavy", "3") {
		t.Errorf("after a heavy reconcile ended, next key = %s, want heavy/3", short(got))
	}
	if n := q.Len(); n != 0 {
		t.Errorf("heavy at its limit again: %d keys ready, want 0", n)
	}

	for _, tt := range []struct{ workers, want int }{{1, 0}, {3, 0}, {4, 3}, {16, 15}} {
		if got := flowLimit(tt.workers); got != tt.want {
			t.Errorf("flowLimit(%d) = %d, want %d", tt.workers, got, tt.want)
		}
	}
}
