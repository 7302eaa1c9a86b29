package release

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ldflags stamp the version, the commit and whether the tree had local changes into
// cmd/kubecel (which reports them in kubecel version and kubecel_build_info), and leave
// out the symbol table and DWARF.
func ldflags(c Config) string {
	flags := []string{"-s", "-w", "-X main.version=" + c.Version, "-X main.revision=" + c.Revision}
	if c.Modified {
		flags = append(flags, "-X main.modified=true")
	}
	return strings.Join(flags, " ")
}

// buildEnv is the environment of a release build: the caller's, for the Go caches and
// proxy, with every setting that changes the output pinned, so that the binary depends on
// the sources and the toolchain alone. Static: no cgo.
func buildEnv(p Platform) []string {
	pinned := map[string]string{
		"CGO_ENABLED":  "0",
		"GOOS":         p.OS,
		"GOARCH":       p.Arch,
		"GOAMD64":      "v1",
		"GOARM64":      "v8.0",
		"GOFLAGS":      "",
		"GOEXPERIMENT": "",
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := pinned[k]; !ok {
			env = append(env, kv)
		}
	}
	for k, v := range pinned {
		env = append(env, k+"="+v)
	}
	return env
}

// buildBinary builds cmd/kubecel for p and returns the binary. -buildvcs=false keeps the
// VCS state out of the binary (the stamped revision says which commit it is), -trimpath
// the build directory.
func buildBinary(ctx context.Context, c Config, p Platform) ([]byte, error) {
	dir, err := os.MkdirTemp("", "kubecel-release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "kubecel")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags(c), "-o", out, "./cmd/kubecel")
	cmd.Dir = c.Root
	cmd.Env = buildEnv(p)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build for %s: %w\n%s", p, err, stderr.Bytes())
	}
	return os.ReadFile(out)
}
