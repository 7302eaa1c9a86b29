package docstest

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/kubecel/kubecel/internal/controlplane"
)

// tools are the binaries of make tools that ```sh run blocks use, linked into the
// copy's bin/ from the control plane's bin directory.
var tools = []string{"helm", "kubectl", "crane"}

// releaseEnv is the environment of ```sh run blocks: a registry and a control plane
// that live until TestDocs ends, the repository's commit and its time.
func (e *docEnv) releaseEnv() ([]string, error) {
	e.release.once.Do(func() {
		for _, tool := range tools {
			if _, err := os.Stat(filepath.Join(e.copy, "bin", tool)); err != nil {
				e.release.err = fmt.Errorf("%s: %w (make tools builds it)", tool, err)
				return
			}
		}
		reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
		e.t.Cleanup(reg.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cp, err := controlplane.Start(ctx, controlplane.Options{})
		if err != nil {
			e.release.err = err
			return
		}
		e.t.Cleanup(func() { _ = cp.Stop() })
		revision, err := e.git("rev-parse", "HEAD")
		if err != nil {
			e.release.err = err
			return
		}
		epoch, err := e.git("log", "-1", "--format=%ct")
		if err != nil {
			e.release.err = err
			return
		}
		goEnv, err := goEnvironment()
		if err != nil {
			e.release.err = err
			return
		}
		e.release.env = append(goEnv,
			"REGISTRY="+strings.TrimPrefix(reg.URL, "http://")+"/platform",
			"KUBECONFIG="+cp.Kubeconfig,
			"REVISION="+revision,
			"SOURCE_DATE_EPOCH="+epoch,
		)
	})
	return e.release.env, e.release.err
}

// goVars are the Go settings that ```sh run blocks keep from the test's environment, so
// that make release uses the same module and build caches and proxy (the blocks' $HOME
// is empty).
var goVars = []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOSUMDB", "GOFLAGS", "GOTOOLCHAIN"}

func goEnvironment() ([]string, error) {
	out, err := exec.Command("go", append([]string{"env"}, goVars...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	values := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(values) != len(goVars) {
		return nil, fmt.Errorf("go env printed %q for %v", out, goVars)
	}
	var env []string
	for i, v := range goVars {
		env = append(env, v+"="+values[i])
	}
	return env, nil
}

// git runs git in the repository (not the copy, which has no .git).
func (e *docEnv) git(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = e.root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
