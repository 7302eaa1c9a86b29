package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestWatchCut: the controller loses every connection to the API server while widgets are
// created, edited and deleted; once it can connect again, everything converges.
func TestWatchCut(t *testing.T) {
	w := newWorld(t, "cut")
	proxy, kubeconfig := proxiedKubeconfig(t)
	ctrl := startKubecel(t, w.Rules, kubeconfig)
	for i := range 5 {
		w.create(fmt.Sprintf("w%d", i), i)
	}
	t.Logf("initial convergence: %s", eventually(t, settle, w.converged).Round(time.Millisecond))

	proxy.Cut()
	t.Logf("cut for %s", outage())
	cutEnds := time.Now().Add(outage())
	for i := 5; i < 8; i++ {
		w.create(fmt.Sprintf("w%d", i), i)
	}
	w.setValue("w0", 100)
	w.setValue("w1", 101)
	w.delete("w2")
	w.delete("w3")
	time.Sleep(time.Until(cutEnds))
	if w.gone("w2") {
		t.Fatal("w2 was deleted while the controller was cut off: its finalizer cannot have been released")
	}
	proxy.Restore()
	t.Logf("converged %s after the cut ended", eventually(t, settle, w.converged).Round(time.Millisecond))
	if !ctrl.running() {
		t.Fatal("kubecel exited during the cut")
	}
}

// TestGoneAfterCompaction: while the controller is cut off, widgets change and etcd is
// compacted past every revision the controller has seen, so its watches come back with
// 410 Gone. It must relist: the changes are applied and the widget deleted meanwhile is
// cleaned up (its finalizer released, its children removed).
func TestGoneAfterCompaction(t *testing.T) {
	w := newWorld(t, "gone")
	proxy, kubeconfig := proxiedKubeconfig(t)
	startKubecel(t, w.Rules, kubeconfig)
	for i := range 4 {
		w.create(fmt.Sprintf("w%d", i), i)
	}
	eventually(t, settle, w.converged)
	list, err := dyn(t).Resource(widgets).Namespace(w.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := list.GetResourceVersion()

	proxy.Cut()
	w.delete("w0")
	w.setValue("w1", 11)
	w.create("w4", 4)
	compactEtcd(t)
	expectGone(t, w.NS, seen)
	time.Sleep(outage())
	proxy.Restore()
	t.Logf("converged %s after reconnecting", eventually(t, settle, w.converged).Round(time.Millisecond))
	if !w.gone("w0") {
		t.Error("w0, deleted during the cut, still exists")
	}
}

// compactEtcd compacts etcd at its current revision.
func compactEtcd(t testing.TB) {
	t.Helper()
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{cp.EtcdURL()}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("connect to etcd: %v", err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := client.Get(ctx, "compaction-probe")
	if err != nil {
		t.Fatalf("read etcd revision: %v", err)
	}
	if _, err := client.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatalf("compact etcd at %d: %v", resp.Header.Revision, err)
	}
	t.Logf("compacted etcd at revision %d", resp.Header.Revision)
}

// expectGone checks that a watch from resourceVersion rv is refused with 410 Gone: the
// controller's own watches, which resume from that far back or earlier, are refused too.
func expectGone(t testing.TB, ns, rv string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wi, err := dyn(t).Resource(widgets).Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return
	}
	if err != nil {
		t.Fatalf("watch from %s: %v", rv, err)
	}
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		if ev.Type == watch.Error {
			if status := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(status) || apierrors.IsGone(status) {
				return
			}
			t.Fatalf("watch from %s: unexpected error %v", rv, ev.Object)
		}
	}
	t.Fatalf("a watch from resourceVersion %s was served after the compaction: no 410 Gone to test", rv)
}

// TestAPIServerRestart: kube-apiserver restarts on the same etcd; the same controller
// process reconnects and acts on what changed.
func TestAPIServerRestart(t *testing.T) {
	w := newWorld(t, "restart")
	ctrl := startKubecel(t, w.Rules, cp.Kubeconfig)
	for i := range 4 {
		w.create(fmt.Sprintf("w%d", i), i)
	}
	eventually(t, settle, w.converged)
	start := time.Now()
	if err := cp.RestartAPIServer(); err != nil {
		log, _ := os.ReadFile(filepath.Join(cp.Dir, "kube-apiserver.log"))
		t.Fatalf("%v; kube-apiserver log tail:\n%s", err, tail(string(log), 40))
	}
	t.Logf("kube-apiserver restarted in %s", time.Since(start).Round(time.Millisecond))
	w.delete("w0")
	w.setValue("w1", 11)
	w.create("w4", 4)
	t.Logf("converged %s after the restart", eventually(t, settle, w.converged).Round(time.Millisecond))
	if !ctrl.running() {
		t.Fatal("kubecel exited instead of reconnecting")
	}
}
