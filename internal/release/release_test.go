package release

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
)

func TestMain(m *testing.M) {
	code := testenv.Run(m, controlplane.Options{
		// install.yaml's controller role is aggregated, as in a cluster: the full
		// control plane runs the real controllers.
		Full: true,
	})
	if first.dist != "" {
		_ = os.RemoveAll(first.dist)
	}
	os.Exit(code)
}

// testVersion is the version the tests release: a pre-release no real one will use.
const testVersion = "v0.0.0-ci"

// hostPlatforms are what the tests build: the host's platform (whose binary runs), and
// linux on the host's architecture when the host is not linux, for an image. make release
// builds all four; TestCheckExecutable checks the binary checks of the others.
func hostPlatforms() []Platform {
	ps := []Platform{{runtime.GOOS, runtime.GOARCH}}
	if runtime.GOOS != "linux" {
		ps = append(ps, Platform{"linux", runtime.GOARCH})
	}
	return ps
}

func git(t *testing.T, root string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// repoConfig is the Config that make release computes from git for testVersion, the
// tests' platforms and dist.
func repoConfig(t *testing.T, dist string) Config {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := strconv.ParseInt(git(t, root, "log", "-1", "--format=%ct"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Version:   testVersion,
		Revision:  git(t, root, "rev-parse", "HEAD"),
		Modified:  git(t, root, "status", "--porcelain") != "",
		Time:      time.Unix(epoch, 0).UTC(),
		Platforms: hostPlatforms(),
		Root:      root,
		Dist:      dist,
		Helm:      filepath.Join(root, "bin", "helm"),
	}
}

// makeRelease runs make release for testVersion and the tests' platforms into dist, as a
// user types it, and returns how long it took.
func makeRelease(t *testing.T, dist string) time.Duration {
	t.Helper()
	var names []string
	for _, p := range hostPlatforms() {
		names = append(names, p.String())
	}
	start := time.Now()
	cmd := exec.Command("make", "release", "VERSION="+testVersion, "PLATFORMS="+strings.Join(names, " "), "DIST="+dist)
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	t.Logf("make release VERSION=%s PLATFORMS=%q:\n%s", testVersion, strings.Join(names, " "), out)
	if !strings.Contains(string(out), "built and checked") {
		t.Fatalf("make release did not check its artefacts:\n%s", out)
	}
	return time.Since(start)
}

var first struct {
	once sync.Once
	dist string
	took time.Duration
	err  error
}

// firstRelease is one make release for the package's tests, into a directory TestMain
// removes when they are done.
func firstRelease(t *testing.T) (Config, time.Duration) {
	t.Helper()
	first.once.Do(func() {
		if first.dist, first.err = os.MkdirTemp("", "kubecel-dist-"); first.err != nil {
			return
		}
		ok := false
		defer func() {
			if !ok {
				first.err = fmt.Errorf("the first make release failed (see its test)")
			}
		}()
		first.took = makeRelease(t, first.dist)
		ok = true
	})
	if first.err != nil {
		t.Fatal(first.err)
	}
	return repoConfig(t, first.dist), first.took
}

// TestReleaseTarget runs make release twice at the test version for the host platform:
// each run ends with Verify of every artefact (checksums, binaries, images, chart,
// install.yaml; cmd/release exits 1 when one fails, which fails makeRelease), and the
// second build's SHA256SUMS is the first's, byte for byte.
func TestReleaseTarget(t *testing.T) {
	c, took := firstRelease(t)
	second := t.TempDir()
	tookAgain := makeRelease(t, second)
	a, err := os.ReadFile(filepath.Join(c.Dist, sumsFile))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(second, sumsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("two builds of the same commit differ:\nfirst:\n%s\nsecond:\n%s", a, b)
	}
	entries, err := os.ReadDir(c.Dist)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []string
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, fmt.Sprintf("%s %s", e.Name(), size(int(info.Size()))))
	}
	t.Logf("artefacts: %s; make release took %s, then %s", strings.Join(sizes, ", "), took.Round(time.Second), tookAgain.Round(time.Second))
}

// TestVerifyFindsTampering: Verify fails for a changed artefact and for an artefact
// SHA256SUMS does not list; its check of install.yaml fails for one that runs another
// image. (A whole Verify reads every archive, which the race detector makes slow.)
func TestVerifyFindsTampering(t *testing.T) {
	c, _ := firstRelease(t)
	tests := []struct {
		name   string
		tamper func(t *testing.T, dist string)
		want   string
	}{
		{"a changed chart", func(t *testing.T, dist string) {
			appendTo(t, filepath.Join(dist, chartArchive(c)), "x")
		}, "sha256"},
		{"an unlisted artefact", func(t *testing.T, dist string) {
			write(t, filepath.Join(dist, "kubecel_linux_s390x.tar.gz"), "x")
		}, "is not in SHA256SUMS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dist := t.TempDir()
			for _, n := range mustReadDir(t, c.Dist) {
				write(t, filepath.Join(dist, n), string(mustRead(t, filepath.Join(c.Dist, n))))
			}
			tt.tamper(t, dist)
			tc := c
			tc.Dist = dist
			err := Verify(t.Context(), tc)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Verify: %v, want an error with %q", err, tt.want)
			}
		})
	}
	install := string(mustRead(t, filepath.Join(c.Dist, installYAML)))
	if err := checkInstall(c, []byte(install)); err != nil {
		t.Errorf("checkInstall of the release's install.yaml: %v", err)
	}
	other := strings.ReplaceAll(install, ImageRef(testVersion), ImageRef("v9.9.9"))
	if err := checkInstall(c, []byte(other)); err == nil || !strings.Contains(err.Error(), "runs image") {
		t.Errorf("checkInstall of an install.yaml with another image: %v, want an error naming the image", err)
	}
}

func mustReadDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, path, content string) {
	t.Helper()
	write(t, path, string(mustRead(t, path))+content)
}
