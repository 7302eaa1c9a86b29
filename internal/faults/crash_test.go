package faults

import (
	"fmt"
	"testing"
	"time"
)

// crashPoints are the numbers of kubecel writes after which the controller is killed
// while it creates: six widgets take 24 writes (finalizer, two children, status).
func crashPoints() []int {
	if *long {
		return []int{1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 18, 20, 23}
	}
	return []int{1, 4, 10, 20}
}

// TestCrash: the controller is SIGKILLed after its Nth write while it creates children,
// then after its (1+N%8)th write while it deletes them; widgets are deleted and edited
// while it is down. After each restart everything converges: no duplicate or orphaned
// child, no widget stuck on its finalizer.
func TestCrash(t *testing.T) {
	for _, n := range crashPoints() {
		t.Run(fmt.Sprintf("after-write-%d", n), func(t *testing.T) {
			w := newWorld(t, fmt.Sprintf("crash-%d", n))
			audit := tailAudit(t, inNamespaces(w.NS, w.Other))
			writes := func() int { return audit.count(t) }

			ctrl := startKubecel(t, w.Rules, cp.Kubeconfig)
			for i := range 6 {
				w.create(fmt.Sprintf("w%d", i), i)
			}
			killed := killAfter(t, ctrl, writes, n)
			w.delete("w0")
			w.delete("w1")
			w.setValue("w2", 20)
			ctrl = startKubecel(t, w.Rules, cp.Kubeconfig)
			took := eventually(t, settle, w.converged)
			t.Logf("creating: killed after %d writes, converged %s after the restart", killed, took.Round(time.Millisecond))
			ctrl.kill() // one controller at a time

			// Now kill it while it cleans up deleted widgets.
			before := writes()
			ctrl = startKubecel(t, w.Rules, cp.Kubeconfig)
			w.delete("w3")
			w.delete("w4")
			w.setValue("w5", 50)
			killed = killAfter(t, ctrl, writes, before+1+n%8) - before
			w.delete("w5")
			startKubecel(t, w.Rules, cp.Kubeconfig)
			took = eventually(t, settle, w.converged)
			t.Logf("deleting: killed after %d more writes, converged %s after the restart", killed, took.Round(time.Millisecond))
			if names := w.names(); len(names) != 1 || names[0] != "w2" {
				t.Errorf("widgets left: %v, want [w2]", names)
			}
		})
	}
}

// killAfter SIGKILLs the controller as soon as writes() reaches n and returns the count seen at the kill. The process's own
// requests in flight may still land.
func killAfter(t testing.TB, ctrl *controller, writes func() int, n int) int {
	t.Helper()
	deadline := time.Now().Add(settle)
	for {
		if got := writes(); got >= n {
			ctrl.kill()
			return got
		}
		if time.Now().After(deadline) {
			ctrl.kill()
			t.Fatalf("kubecel made only %d writes in %s, want %d", writes(), settle, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
