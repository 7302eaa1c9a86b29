package leader

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/lease"
	"github.com/kubecel/kubecel/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m, controlplane.Options{}) }

// Short enough for a test, long enough for a loaded machine: client-go requires
// LeaseDuration > RenewDeadline > 1.2 * RetryPeriod (lease.Timing.Validate).
func testOptions(ns string) Options {
	return Options{Namespace: ns, ID: "lease", Timing: lease.Timing{LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond}}
}

// replica is one Elector and a client that writes through its fenced configuration.
type replica struct {
	elector *Elector
	kube    kubernetes.Interface
}

func newReplica(t *testing.T, ns string) *replica {
	t.Helper()
	cfg := testenv.Config(t)
	e, err := New(testOptions(ns), cfg, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &replica{elector: e, kube: kube}
}

// write creates a ConfigMap through the replica's fenced configuration.
func (r *replica) write(ctx context.Context, ns, name string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	_, err := r.kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	return err
}

// await waits for Run's result, with a deadline far above the lease timings.
func await(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s: Run did not return", what)
		return nil
	}
}

// TestHandOver runs two electors on one Lease: the second leads only after the first
// one's function returned, and the first, having released the Lease, may no longer
// write.
func TestHandOver(t *testing.T) {
	ctx := t.Context()
	ns := testenv.Namespace(t)
	a, b := newReplica(t, ns), newReplica(t, ns)
	if !a.elector.Standby() {
		t.Error("Standby() = false before the Lease was ever held")
	}
	var aRunning atomic.Bool
	aLeads, stopA := make(chan error, 1), make(chan struct{})
	aDone := make(chan error, 1)
	go func() {
		aDone <- a.elector.Run(ctx, func(ctx context.Context) error {
			aRunning.Store(true)
			defer aRunning.Store(false)
			aLeads <- a.write(ctx, ns, "from-a")
			<-stopA
			return nil
		})
	}()
	if err := await(t, aLeads, "first replica"); err != nil {
		t.Fatalf("the leader's write failed: %v", err)
	}
	if a.elector.Standby() {
		t.Error("Standby() = true while leading")
	}

	bLeads := make(chan error, 1)
	bDone := make(chan error, 1)
	bCtx, stopB := context.WithCancel(ctx)
	defer stopB()
	go func() {
		bDone <- b.elector.Run(bCtx, func(ctx context.Context) error {
			if aRunning.Load() {
				bLeads <- errors.New("the second replica leads while the first one's function runs")
				return nil
			}
			bLeads <- b.write(ctx, ns, "from-b")
			<-ctx.Done()
			return nil
		})
	}()
	if err := b.write(ctx, ns, "from-standby"); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a standby's write: err = %v, want refused", err)
	}

	close(stopA)
	if err := await(t, aDone, "first replica"); err != nil {
		t.Errorf("first replica's Run = %v, want nil after its function returned", err)
	}
	if err := a.write(ctx, ns, "after-release"); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a write after releasing the Lease: err = %v, want refused", err)
	}
	if err := await(t, bLeads, "second replica"); err != nil {
		t.Fatalf("second replica: %v", err)
	}
	stopB()
	if err := await(t, bDone, "second replica"); err != nil {
		t.Errorf("second replica's Run after its context ended = %v, want nil", err)
	}
}

// TestLostLease has another holder take the Lease while an elector leads: the leader's
// function is canceled and its writes are refused, Run reports the loss, and the
// other holder's Lease is left alone.
func TestLostLease(t *testing.T) {
	ctx := t.Context()
	ns := testenv.Namespace(t)
	a := newReplica(t, ns)
	leading, writeAfterLoss := make(chan struct{}), make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		done <- a.elector.Run(ctx, func(ctx context.Context) error {
			close(leading)
			<-ctx.Done()
			// Run's context lives on: only the fencing can stop this write.
			writeAfterLoss <- a.write(context.WithoutCancel(ctx), ns, "after-loss")
			return nil
		})
	}()
	select {
	case <-leading:
	case err := <-done:
		t.Fatalf("Run returned before leading: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("the elector never led")
	}

	// Another replica takes the Lease (as one would after this one froze).
	leases := testenv.Kube(t).CoordinationV1().Leases(ns)
	intruder := "intruder"
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // the leader renews meanwhile
		lease, err := leases.Get(ctx, "lease", metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NewMicroTime(time.Now())
		lease.Spec.HolderIdentity, lease.Spec.RenewTime, lease.Spec.AcquireTime = &intruder, &now, &now
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	err = await(t, done, "leader")
	if err == nil || !strings.Contains(err.Error(), "lost the Lease") {
		t.Errorf("Run = %v, want the lost Lease reported", err)
	}
	if werr := <-writeAfterLoss; werr == nil || !strings.Contains(werr.Error(), "refused") {
		t.Errorf("a write after losing the Lease: err = %v, want refused", werr)
	}
	got, err := leases.Get(ctx, "lease", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if holder := deref(got.Spec.HolderIdentity); holder != intruder {
		t.Errorf("Lease holder after the loss = %q, want %q (the new holder's Lease must not be released)", holder, intruder)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
