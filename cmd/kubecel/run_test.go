package main

import (
	"strings"
	"testing"
)

func TestRunRefusesDryRunWithLeaderElection(t *testing.T) {
	_, stderr, code := runCommand(t, newRunCommand(), "--rules", "testdata/render/rules.yaml", "--dry-run", "--leader-elect",
		"--kubeconfig", "testdata/does-not-exist", "--metrics-addr", "", "--health-addr", "")
	if code != 1 || !strings.Contains(stderr, "--dry-run and --leader-elect cannot be combined") {
		t.Errorf("exit code %d, stderr %q; want 1 and the refusal", code, stderr)
	}
}
