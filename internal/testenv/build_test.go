package testenv_test

import (
	"debug/buildinfo"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kubecel/kubecel/internal/testenv"
)

// TestBuildArgs builds a program with BuildArgs and reads back how it was built: with
// -race exactly when this test binary was.
func TestBuildArgs(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "hello")
	if out, err := exec.Command("go", testenv.BuildArgs(bin, "./testdata/hello")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	race := "false"
	for _, s := range info.Settings {
		if s.Key == "-race" {
			race = s.Value
		}
	}
	if want := map[bool]string{true: "true", false: "false"}[testenv.RaceEnabled]; race != want {
		t.Errorf("built with -race=%s, want %s (the test binary's RaceEnabled is %v)", race, want, testenv.RaceEnabled)
	}
}
