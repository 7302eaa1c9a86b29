package controlplane_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
)

// orphanEnv makes the test binary start a full control plane, print its directory and
// wait to be killed, standing in for a test binary that dies without cleaning up.
const orphanEnv = "KUBECEL_TEST_ORPHAN_CONTROL_PLANE"

func runOrphanedControlPlane() {
	cp, err := controlplane.Start(context.Background(), controlplane.Options{Full: true})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("dir:", cp.Dir)
	select {} // wait for SIGKILL
}

func TestKilledOwnerLeavesNoProcesses(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), orphanEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read control-plane dir: %v", err)
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "dir: ")
	if !ok {
		t.Fatalf("helper said %q", line)
	}
	if pids := processesMentioning(dir); len(pids) < 5 {
		t.Fatalf("expected etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok running in %s, found pids %v", dir, pids)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		if pids := processesMentioning(dir); len(pids) > 0 {
			return false, fmt.Sprintf("processes still running: %v", pids)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			return false, fmt.Sprintf("%s not removed (stat: %v)", dir, err)
		}
		return true, ""
	})
}

// processesMentioning lists the pids whose command line contains s.
func processesMentioning(s string) []string {
	var pids []string
	entries, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, e := range entries {
		data, err := os.ReadFile(e)
		if err == nil && bytes.Contains(data, []byte(s)) {
			pids = append(pids, filepath.Base(filepath.Dir(e)))
		}
	}
	return pids
}
