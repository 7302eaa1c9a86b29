package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// tinyBinary cross-compiles a program that does nothing for p (static, as the release's
// binaries are) and returns it.
func tinyBinary(t *testing.T, p Platform) []byte {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module tiny\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", "tiny", ".")
	cmd.Dir = dir
	cmd.Env = buildEnv(p)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build for %s: %v\n%s", p, err, out)
	}
	bin, err := os.ReadFile(filepath.Join(dir, "tiny"))
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestCheckExecutable: a binary built for each release platform passes the check of its
// platform (an ELF or Mach-O executable of its CPU, a static Linux one) and fails that of
// every other; so do the bytes of a shell script.
func TestCheckExecutable(t *testing.T) {
	bins := map[Platform][]byte{}
	for _, p := range Platforms {
		bins[p] = tinyBinary(t, p)
	}
	for _, built := range Platforms {
		for _, checked := range Platforms {
			err := CheckExecutable(bins[built], checked)
			if (err == nil) != (built == checked) {
				t.Errorf("a binary for %s checked as one for %s: %v", built, checked, err)
			}
		}
	}
	for _, p := range Platforms {
		if err := CheckExecutable([]byte("#!/bin/sh\necho kubecel\n"), p); err == nil {
			t.Errorf("a shell script passed the check for %s", p)
		}
	}
}
