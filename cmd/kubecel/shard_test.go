package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/shard"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

// shardParents is how many parents the sharding test spreads over its replicas.
const shardParents = 40

// shardWorld is the sharding test's cluster, replicas and parents.
type shardWorld struct {
	t        *testing.T
	bin      string
	cp       *controlplane.ControlPlane
	kube     kubernetes.Interface
	ns       string
	rules    string
	replicas map[string]*replica // by name
	health   map[string]string   // base URL of each replica's /healthz and /readyz
	metrics  map[string]string   // base URL of each replica's /metrics
}

// TestSharding runs replicas of the built binary with --sharding against a control
// plane that audits every write. It checks that every parent converges with three
// replicas, each parent's children written by the replica that the ring gives its
// bucket, and each replica caching whole only the parents it serves (the others as
// stubs), also after a replica joined and after one left; then, while every parent
// keeps changing, that a replica joining, one leaving (SIGTERM), one crashing
// (SIGKILL) and one freezing (SIGSTOP) hand the parents over
// with nothing lost and no parent written by two replicas at once: each parent's writes
// come from its old owner, then only from its new one, and once the ring has settled
// only from its new one, which writes every parent edited then. A frozen replica, woken
// up, exits without writing. At the end, no replica writes at rest.
func TestSharding(t *testing.T) {
	w := &shardWorld{t: t, bin: buildKubecel(t), cp: auditedControlPlane(t), ns: "shard-test", replicas: map[string]*replica{},
		health: map[string]string{}, metrics: map[string]string{}}
	w.kube = kubernetes.NewForConfigOrDie(w.cp.Config)
	if _, err := w.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.rules = filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(w.rules, fmt.Appendf(nil, leaderRules, w.ns), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"a", "b", "c"} {
		w.start(name)
	}
	ring := w.settled("a", "b", "c")
	mark := len(auditEvents(t, w.cp))
	for i := range shardParents {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: parentName(i), Namespace: w.ns, Labels: map[string]string{"kubecel-test/role": "parent"}},
			Data:       map[string]string{"alpha": "1", "beta": "1"},
		}
		if _, err := w.kube.CoreV1().ConfigMaps(w.ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w.converged("1")
	writers := w.writers(mark)
	busy := map[string]bool{}
	for i := range shardParents {
		p := parentName(i)
		want := ring.Assign()[contract.Bucket(w.ns, p)]
		if diff := slices.Compact(writers[p]); !slices.Equal(diff, []string{want}) {
			t.Errorf("parent %s: written by %v, want only by %s, the owner of its bucket", p, diff, w.nameOf(want))
		}
		busy[want] = true
	}
	if len(busy) != 3 {
		t.Errorf("%d of 3 replicas wrote children, want all: the parents are not spread", len(busy))
	}
	for _, name := range []string{"a", "b", "c"} {
		w.reports(name, ring)
	}

	// A replica joins while every parent changes.
	w.handover("join", ring, func() { w.start("d") }, "2", "a", "b", "c", "d")
	ring = w.ring("a", "b", "c", "d")
	for _, name := range []string{"a", "b", "c", "d"} {
		w.reports(name, ring)
	}
	// One leaves as Kubernetes stops it: it exits 0 and deletes its Lease.
	w.handover("SIGTERM", ring, func() { w.signal("b", syscall.SIGTERM) }, "3", "a", "c", "d")
	if code := w.replicas["b"].cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("replica b exited with %d after SIGTERM, want 0", code)
	}
	for _, name := range []string{"a", "c", "d"} {
		w.reports(name, w.ring("a", "c", "d"))
	}
	// One crashes: its Lease stays until it expires.
	ring = w.ring("a", "c", "d")
	w.handover("SIGKILL", ring, func() { w.signal("c", syscall.SIGKILL) }, "4", "a", "d")
	// At rest, with two replicas, nothing writes but the Lease renewals.
	w.quiet("a", "d")

	// One freezes: the other takes its parents over once its Lease expires; woken up,
	// it finds its writes fenced and its Lease gone, and exits non-zero without a write.
	ring = w.ring("a", "d")
	frozen := len(auditEvents(t, w.cp))
	var stopped time.Time
	w.handover("SIGSTOP", ring, func() {
		if err := w.replicas["d"].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		// The signal is delivered asynchronously: a thread running on another CPU may
		// still send a request (a write of the edits that follow, a Lease renewal). Wait
		// until every thread stopped; requests received after that are the woken
		// replica's.
		waitStopped(t, w.replicas["d"].cmd.Process.Pid)
		stopped = time.Now()
	}, "5", "a")
	// Twice the lease duration: a deletes d's Lease.
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		leases, err := w.kube.CoordinationV1().Leases(w.ns).List(t.Context(), metav1.ListOptions{LabelSelector: shard.LabelRing + "=kubecel"})
		if err != nil {
			return false, err.Error()
		}
		return len(leases.Items) == 1, fmt.Sprintf("%d Leases, want 1: the frozen replica's is deleted once expired", len(leases.Items))
	})
	w.signal("d", syscall.SIGCONT)
	if code := w.replicas["d"].cmd.ProcessState.ExitCode(); code == 0 {
		t.Errorf("the frozen replica exited 0 after it woke up, want non-zero; log:\n%s", readFile(w.replicas["d"].log))
	}
	for _, e := range auditEvents(t, w.cp)[frozen:] {
		if e.RequestReceived.Before(stopped) {
			continue // sent before the freeze took hold
		}
		if e.UserAgent == "kubecel/"+w.replicas["d"].identity || strings.HasPrefix(e.UserAgent, "kubecel/"+w.replicas["d"].identity+" ") {
			t.Errorf("the frozen replica wrote after SIGSTOP: %s %s", e.Verb, e.RequestURI)
		}
	}
	w.quiet("a")
}

// quiet checks that at rest the live replicas write nothing but their Lease renewals,
// having had the chance to (atRest): every parent is annotated.
func (w *shardWorld) quiet(live ...string) {
	w.t.Helper()
	atRest(w.t, w.cp, w.urls(live), func() int {
		for i := range shardParents {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"test.kubecel.dev/quiet":%q}}}`, strconv.FormatInt(time.Now().UnixNano(), 10))
			if _, err := w.kube.CoreV1().ConfigMaps(w.ns).Patch(w.t.Context(), parentName(i), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				w.t.Fatal(err)
			}
		}
		return shardParents
	})
}

// urls are the base URLs of the named replicas' /metrics.
func (w *shardWorld) urls(names []string) []string {
	var out []string
	for _, name := range names {
		out = append(out, w.metrics[name])
	}
	return out
}

// atRest checks that at rest the processes serving metrics at urls write nothing but
// their Lease renewals, having had the chance to: poke changes each parent in a way no
// rule reads (an annotation) and returns how many it changed, which has each parent's
// owner reconcile it; the writes are looked at once the processes counted that many
// reconciles more, with their queues empty.
func atRest(t *testing.T, cp *controlplane.ControlPlane, urls []string, poke func() int) {
	t.Helper()
	figures := func() (reconciles, busy float64) {
		for _, url := range urls {
			_, body := httpGet(url + "/metrics")
			f := figuresOf(body, "")
			reconciles, busy = reconciles+f.reconciles, busy+f.busy
		}
		return reconciles, busy
	}
	before, _ := figures()
	mark := len(auditEvents(t, cp))
	n := poke()
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		reconciles, busy := figures()
		return reconciles >= before+float64(n) && busy == 0,
			fmt.Sprintf("%g reconciles since %d parents were annotated, queues busy %g; want at least %d and 0", reconciles-before, n, busy, n)
	})
	for _, e := range auditEvents(t, cp)[mark:] {
		if strings.HasPrefix(e.UserAgent, "kubecel/") && e.ObjectRef.Resource != "leases" {
			t.Errorf("a write at rest: %s %s by %s", e.Verb, e.RequestURI, e.UserAgent)
		}
	}
}

// reports checks what a replica says of the ring on /readyz and in its metrics.
func (w *shardWorld) reports(name string, ring shard.Ring) {
	w.t.Helper()
	id := w.replicas[name].identity
	owned := ring.Owned(id)
	parents := 0
	for i := range shardParents {
		if owned.Has(contract.Bucket(w.ns, parentName(i))) {
			parents++
		}
	}
	readyz := fmt.Sprintf("ok\nring %s: serving %d of 256 buckets, %d members\n", ring.Version(), owned.Len(), len(ring))
	metrics := []string{
		fmt.Sprintf("kubecel_shard_members %d\n", len(ring)),
		fmt.Sprintf("kubecel_shard_buckets %d\n", owned.Len()),
		fmt.Sprintf("kubecel_shard_owned_parents %d\n", parents),
		// Whole in its caches only the parents it serves, the others as stubs.
		fmt.Sprintf("kubecel_shard_cached_parents{form=\"whole\"} %d\n", parents),
		fmt.Sprintf("kubecel_shard_cached_parents{form=\"stub\"} %d\n", shardParents-parents),
		"kubecel_shard_handover_duration_seconds_count ",
		"kubecel_shard_handovers_total ",
	}
	testenv.Eventually(w.t, time.Minute, func() (bool, string) {
		code, body := httpGet(w.health[name] + "/readyz")
		if code != 200 || body != readyz {
			return false, fmt.Sprintf("replica %s /readyz: %d %q, want 200 %q", name, code, body, readyz)
		}
		_, body = httpGet(w.metrics[name] + "/metrics")
		for _, m := range metrics {
			if !strings.Contains(body, m) {
				return false, fmt.Sprintf("replica %s /metrics lacks %q", name, m)
			}
		}
		return true, ""
	})
}

func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(body)
}

func parentName(i int) string { return fmt.Sprintf("p%02d", i) }

// start starts a replica with --sharding and short lease timings.
func (w *shardWorld) start(name string) {
	w.t.Helper()
	ports, err := freePorts(2)
	if err != nil {
		w.t.Fatal(err)
	}
	w.health[name] = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	w.metrics[name] = fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	r := startRun(w.t, w.bin, name, "--rules", w.rules, "--kubeconfig", w.cp.Kubeconfig,
		"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", ports[1]), "--health-addr", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--workers", "4",
		"--sharding", "--sharding-namespace", w.ns,
		"--sharding-lease-duration", "6s", "--sharding-renew-deadline", "4s", "--sharding-retry-period", "1s")
	testenv.Eventually(w.t, time.Minute, func() (bool, string) {
		r.identity = logIdentity(r.log)
		return r.identity != "", fmt.Sprintf("replica %s has not logged its identity; log:\n%s", name, readFile(r.log))
	})
	w.replicas[name] = r
}

func (w *shardWorld) signal(name string, sig syscall.Signal) {
	w.t.Helper()
	r := w.replicas[name]
	if err := r.cmd.Process.Signal(sig); err != nil {
		w.t.Fatal(err)
	}
	select {
	case <-r.done:
	case <-time.After(time.Minute):
		w.t.Fatalf("replica %s still runs a minute after %s", name, sig)
	}
}

// ring is the ring of the named replicas.
func (w *shardWorld) ring(names ...string) shard.Ring {
	var ids []string
	for _, n := range names {
		ids = append(ids, w.replicas[n].identity)
	}
	return shard.NewRing(ids...)
}

func (w *shardWorld) nameOf(identity string) string {
	for n, r := range w.replicas {
		if r.identity == identity {
			return n
		}
	}
	return identity
}

// settled waits until the named replicas' Leases are the ring's only ones and all of
// them acknowledge its version, and returns the ring.
func (w *shardWorld) settled(names ...string) shard.Ring {
	w.t.Helper()
	ring := w.ring(names...)
	testenv.Eventually(w.t, 2*time.Minute, func() (bool, string) {
		leases, err := w.kube.CoordinationV1().Leases(w.ns).List(w.t.Context(), metav1.ListOptions{LabelSelector: shard.LabelRing + "=kubecel"})
		if err != nil {
			return false, err.Error()
		}
		var acks []string
		for _, l := range leases.Items {
			acks = append(acks, w.nameOf(*l.Spec.HolderIdentity)+"="+l.Annotations[shard.AnnotationAck])
		}
		want := len(leases.Items) == len(names)
		for _, l := range leases.Items {
			want = want && l.Annotations[shard.AnnotationAck] == ring.Version()
		}
		return want, fmt.Sprintf("Leases acknowledge %v, want %d members at ring %s", acks, len(names), ring.Version())
	})
	return ring
}

// converged waits until every parent's children hold value.
func (w *shardWorld) converged(value string) {
	w.t.Helper()
	testenv.Eventually(w.t, 2*time.Minute, func() (bool, string) {
		list, err := w.kube.CoreV1().ConfigMaps(w.ns).List(w.t.Context(), metav1.ListOptions{LabelSelector: contract.LabelRule + "=fanout"})
		if err != nil {
			return false, err.Error()
		}
		have := map[string]string{}
		for _, cm := range list.Items {
			have[cm.Name] = cm.Data["value"]
		}
		for i := range shardParents {
			for _, key := range []string{"alpha", "beta"} {
				if name := parentName(i) + "-" + key; have[name] != value {
					return false, fmt.Sprintf("child %s holds %q, want %q", name, have[name], value)
				}
			}
		}
		return true, ""
	})
}

// handover changes the ring with change while it edits every parent, one after the
// other, over and over until the new ring has settled (every member's Lease acknowledges
// it); then it edits every parent once more, to value. It checks that each parent's
// writes came from its owner in the old ring, then only from its owner in the new one,
// and that once the ring had settled only the new owner wrote it, and did: a moved
// parent is owned by one replica at a time, and its new owner takes it over.
func (w *shardWorld) handover(what string, before shard.Ring, change func(), value string, after ...string) {
	w.t.Helper()
	mark := len(auditEvents(w.t, w.cp))
	change()
	settled := make(chan shard.Ring)
	go func() { settled <- w.settled(after...) }()
	var ring shard.Ring
	for i := 0; ring == nil; i++ {
		w.edit(parentName(i%shardParents), fmt.Sprintf("%s-%d", value, i/shardParents))
		select {
		case ring = <-settled:
		case <-time.After(50 * time.Millisecond):
		}
	}
	since := len(auditEvents(w.t, w.cp))
	for i := range shardParents {
		w.edit(parentName(i), value)
	}
	w.converged(value)
	old, next := before.Assign(), ring.Assign()
	all, settledWrites := w.writers(mark), w.writers(since)
	moved := 0
	for i := range shardParents {
		p := parentName(i)
		b := contract.Bucket(w.ns, p)
		want := [][]string{{next[b]}, {old[b], next[b]}}
		if old[b] == next[b] {
			want = [][]string{{next[b]}}
		} else {
			moved++
		}
		if seq := slices.Compact(all[p]); !slices.ContainsFunc(want, func(s []string) bool { return slices.Equal(s, seq) }) {
			w.t.Errorf("%s: parent %s (bucket %d) written by %v in this order, want its old owner %s, then only its new owner %s",
				what, p, b, w.names(seq), w.nameOf(old[b]), w.nameOf(next[b]))
		}
		if seq := slices.Compact(settledWrites[p]); !slices.Equal(seq, []string{next[b]}) {
			w.t.Errorf("%s: after the ring settled, parent %s (bucket %d) written by %v, want only by its new owner %s",
				what, p, b, w.names(seq), w.nameOf(next[b]))
		}
	}
	w.t.Logf("%s: ring %s -> %s, %d parents written, %d of them moved", what, before.Version(), ring.Version(), len(all), moved)
}

// edit sets both values of a parent.
func (w *shardWorld) edit(parent, value string) {
	w.t.Helper()
	patch := fmt.Sprintf(`{"data":{"alpha":%q,"beta":%q}}`, value, value)
	if _, err := w.kube.CoreV1().ConfigMaps(w.ns).Patch(w.t.Context(), parent, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

func (w *shardWorld) names(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = w.nameOf(id)
	}
	return out
}

// writers lists, per parent, the identities of the replicas that wrote its children
// since the audit mark, in the order of the writes.
func (w *shardWorld) writers(mark int) map[string][]string {
	out := map[string][]string{}
	for _, e := range auditEvents(w.t, w.cp)[mark:] {
		id, ok := strings.CutPrefix(strings.Fields(e.UserAgent + " ")[0], "kubecel/")
		if !ok || e.ObjectRef.Resource != "configmaps" || e.ObjectRef.Namespace != w.ns {
			continue
		}
		parent, _, _ := strings.Cut(e.ObjectRef.Name, "-")
		out[parent] = append(out[parent], id)
	}
	return out
}

// waitStopped waits until every thread of process pid is stopped by a signal (state T in
// /proc/PID/task/*/stat).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		if err != nil || len(stats) == 0 {
			return false, fmt.Sprintf("no threads of process %d in /proc (%v)", pid, err)
		}
		for _, f := range stats {
			data, err := os.ReadFile(f)
			if err != nil {
				return false, err.Error()
			}
			// The state follows the command name, which is in parentheses.
			rest := string(data[strings.LastIndexByte(string(data), ')')+1:])
			if state := strings.Fields(rest); len(state) == 0 || state[0] != "T" {
				return false, fmt.Sprintf("thread %s of process %d is not stopped yet", filepath.Dir(f), pid)
			}
		}
		return true, ""
	})
}
