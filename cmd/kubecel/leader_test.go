package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
)

// leaderRules makes one ConfigMap per key of a labelled ConfigMap, so that a new key
// makes a new child and leaves the others alone.
const leaderRules = `apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: fanout
    parent:
      apiVersion: v1
      resource: configmaps
      namespaces: [%[1]s]
      selector:
        matchLabels: {kubecel-test/role: parent}
    children:
      - id: copy
        forEach: "parent.data.map(k, k)"
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata:
            name: "${parent.metadata.name}-${each}"
          data:
            value: "${parent.data[each]}"
`

// replica is one `kubecel run --leader-elect` process.
type replica struct {
	cmd      *exec.Cmd
	log      string
	identity string
	done     chan struct{}
}

// TestLeaderElection runs two replicas of the built binary against a control plane that
// audits every write, freezes the leader with SIGSTOP, and checks from the audit log's
// user agents that the standby takes over, that the two never wrote the same object,
// and that the frozen leader, woken up after losing the Lease, exits non-zero without
// writing anything.
func TestLeaderElection(t *testing.T) {
	bin := buildKubecel(t)
	cp := auditedControlPlane(t)
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	ns := "leader-test"
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rulesFile := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rulesFile, fmt.Appendf(nil, leaderRules, ns), 0o600); err != nil {
		t.Fatal(err)
	}
	createParent := func(name string, data map[string]string) {
		t.Helper()
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"kubecel-test/role": "parent"}},
			Data:       data,
		}
		if _, err := kube.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitChild := func(name, value string) {
		t.Helper()
		testenv.Eventually(t, time.Minute, func() (bool, string) {
			cm, err := kube.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return cm.Data["value"] == value, fmt.Sprintf("child %s holds %v, want value %s", name, cm.Data, value)
		})
	}
	holder := func() string {
		lease, err := kube.CoordinationV1().Leases(ns).Get(t.Context(), "kubecel", metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}

	replicas := []*replica{startReplica(t, bin, cp.Kubeconfig, rulesFile, ns, "a"), startReplica(t, bin, cp.Kubeconfig, rulesFile, ns, "b")}
	createParent("one", map[string]string{"alpha": "1", "beta": "2"})
	var leader, standby *replica
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		for _, r := range replicas {
			if r.identity == "" {
				r.identity = logIdentity(r.log)
			}
		}
		h := holder()
		for i, r := range replicas {
			if h != "" && r.identity == h {
				leader, standby = r, replicas[1-i]
				return standby.identity != "", "the standby has not logged its identity yet"
			}
		}
		return false, fmt.Sprintf("Lease holder %q is none of the replicas", h)
	})
	waitChild("one-alpha", "1")
	waitChild("one-beta", "2")

	// Freeze the leader. The audit log from here on must hold nothing from it.
	if err := leader.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := len(auditEvents(t, cp))
	createParent("two", map[string]string{"gamma": "3"})
	if _, err := kube.CoreV1().ConfigMaps(ns).Patch(t.Context(), "one", types.MergePatchType, []byte(`{"data":{"delta":"4"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		h := holder()
		return h == standby.identity, fmt.Sprintf("Lease holder is %q, want the standby %s", h, standby.identity)
	})
	waitChild("two-gamma", "3")
	waitChild("one-delta", "4")

	// Wake the old leader: it must notice the loss, stop and exit non-zero.
	if err := leader.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-leader.done:
	case <-time.After(time.Minute):
		t.Fatalf("the old leader still runs a minute after SIGCONT; log:\n%s", readFile(leader.log))
	}
	if code := leader.cmd.ProcessState.ExitCode(); code == 0 {
		t.Errorf("the old leader exited with 0, want non-zero; log:\n%s", readFile(leader.log))
	}
	if log := readFile(leader.log); !strings.Contains(log, "lost the Lease") {
		t.Errorf("the old leader does not say it lost the Lease; log:\n%s", log)
	}
	if h := holder(); h != standby.identity {
		t.Errorf("after the old leader exited the Lease holder is %q, want %s", h, standby.identity)
	}

	// Stop the new leader as Kubernetes does: it stops its controller, releases the Lease
	// and exits 0.
	if err := standby.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-standby.done:
	case <-time.After(time.Minute):
		t.Fatalf("the leader still runs a minute after SIGTERM; log:\n%s", readFile(standby.log))
	}
	if code := standby.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the leader exited with %d after SIGTERM, want 0; log:\n%s", code, readFile(standby.log))
	}
	if h := holder(); h != "" {
		t.Errorf("after SIGTERM the Lease holder is %q, want none: the leader releases it", h)
	}

	events := auditEvents(t, cp)
	written := map[string][]string{} // user agent -> objects written
	for i, e := range events {
		ua, _, _ := strings.Cut(e.UserAgent, " ")
		who := ""
		switch ua {
		case "kubecel/" + leader.identity:
			who = "leader"
			if i >= stoppedAt {
				t.Errorf("the frozen leader wrote after SIGSTOP: %s %s", e.Verb, e.RequestURI)
			}
		case "kubecel/" + standby.identity:
			who = "standby"
		default:
			continue
		}
		obj := fmt.Sprintf("%s/%s %s/%s", e.ObjectRef.Resource, e.ObjectRef.Subresource, e.ObjectRef.Namespace, e.ObjectRef.Name)
		switch e.ObjectRef.Resource {
		case "leases":
			continue // both replicas write the Lease: that is the election
		case "selfsubjectaccessreviews", "selfsubjectrulesreviews":
			continue // a permission check at rule start, not an object
		}
		if who == "standby" && i < stoppedAt {
			t.Errorf("the standby wrote before the leader was frozen: %s %s", e.Verb, e.RequestURI)
		}
		written[who] = append(written[who], obj)
	}
	for _, obj := range written["leader"] {
		if slices.Contains(written["standby"], obj) {
			t.Errorf("%s was written by both replicas", obj)
		}
	}
	// The audit log attributes the writes as expected: each made its own children.
	for who, want := range map[string]string{"leader": "configmaps/ " + ns + "/one-alpha", "standby": "configmaps/ " + ns + "/two-gamma"} {
		if !slices.Contains(written[who], want) {
			t.Errorf("the %s's writes %v lack %s", who, written[who], want)
		}
	}
}

// buildKubecel builds the binary as users run it.
func buildKubecel(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kubecel")
	if out, err := exec.Command("go", testenv.BuildArgs(bin, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// auditedControlPlane starts a control plane of the test's own whose API server logs
// every write, and stops it when the test ends.
func auditedControlPlane(t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	startCtx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(startCtx, controlplane.Options{AuditWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stop control plane: %v", err)
		}
	})
	return cp
}

// startReplica starts `kubecel run --leader-elect` with a short lease, logging to a
// file, and stops it when the test ends.
func startReplica(t *testing.T, bin, kubeconfig, rulesFile, ns, name string) *replica {
	t.Helper()
	return startRun(t, bin, name, "--rules", rulesFile, "--kubeconfig", kubeconfig,
		"--metrics-addr", "", "--health-addr", "",
		"--leader-elect", "--leader-elect-namespace", ns,
		"--leader-elect-lease-duration", "6s", "--leader-elect-renew-deadline", "4s", "--leader-elect-retry-period", "1s")
}

// startRun starts `kubecel run` with args, logging to a file, and kills it (after
// waking it from a SIGSTOP) when the test ends.
func startRun(t *testing.T, bin, name string, args ...string) *replica {
	t.Helper()
	r := &replica{log: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
	log, err := os.Create(r.log)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(bin, append([]string{"run"}, args...)...)
	r.cmd.Env = testenv.ProcessEnv()
	r.cmd.Stdout, r.cmd.Stderr = log, log
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = r.cmd.Wait()
		_ = log.Close()
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = r.cmd.Process.Signal(syscall.SIGCONT)
			_ = r.cmd.Process.Kill()
			<-r.done
		}
		testenv.CheckRaces(t, "replica "+name, readFile(r.log))
		if t.Failed() {
			t.Logf("replica %s log:\n%s", name, readFile(r.log))
		}
	})
	return r
}

var identityField = regexp.MustCompile(`identity="([^"]+)"`)

// logIdentity reads a replica's leader election identity from its log.
func logIdentity(path string) string {
	if m := identityField.FindStringSubmatch(readFile(path)); m != nil {
		return m[1]
	}
	return ""
}

func readFile(path string) string {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err.Error()
	}
	return string(data)
}

func auditEvents(t *testing.T, cp *controlplane.ControlPlane) []controlplane.AuditEvent {
	t.Helper()
	events, err := cp.AuditEvents()
	if err != nil {
		t.Fatal(err)
	}
	return events
}
