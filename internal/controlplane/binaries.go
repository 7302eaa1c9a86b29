package controlplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// BinDirEnv names the environment variable that overrides where the control-plane
// binaries are looked up.
const BinDirEnv = "KUBECEL_BIN_DIR"

// FindBinDir returns the first directory that holds every binary of a control plane
// (etcd, kube-apiserver, kube-controller-manager, and for a full one kube-scheduler and
// kwok): dir when it is set, then $KUBECEL_BIN_DIR, the directory of the running
// executable, and bin/ at the root of the Go module that contains the working directory.
func FindBinDir(dir string, full bool) (string, error) {
	binaries := minimalBinaries
	if full {
		binaries = fullBinaries
	}
	var candidates []string
	if dir != "" {
		candidates = append(candidates, dir)
	} else {
		if env := os.Getenv(BinDirEnv); env != "" {
			candidates = append(candidates, env)
		}
		if exe, err := os.Executable(); err == nil {
			candidates = append(candidates, filepath.Dir(exe))
		}
		if root, ok := moduleRoot(); ok {
			candidates = append(candidates, filepath.Join(root, "bin"))
		}
	}
	for _, c := range candidates {
		if hasBinaries(c, binaries) {
			return filepath.Abs(c)
		}
	}
	return "", fmt.Errorf("control-plane binaries (%v) not found in %v: run `make controlplane` first, or set %s",
		binaries, candidates, BinDirEnv)
}

func hasBinaries(dir string, binaries []string) bool {
	for _, b := range binaries {
		info, err := os.Stat(filepath.Join(dir, b))
		if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// moduleRoot walks up from the working directory to the directory holding kubecel's
// go.mod (a nested module such as cmd/controlplane does not count).
func moduleRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && isKubecelModule(data) {
			return dir, true
		} else if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

func isKubecelModule(gomod []byte) bool {
	const want = "module github.com/kubecel/kubecel\n"
	return len(gomod) >= len(want) && string(gomod[:len(want)]) == want
}
