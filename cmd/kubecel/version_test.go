package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/internal/cli/buildinfo"
	"github.com/kubecel/kubecel/internal/testenv"
)

func TestVersionCommand(t *testing.T) {
	want := readBuildInfo()
	decodeJSON := func(s string) (buildinfo.Info, error) {
		var b buildinfo.Info
		err := json.Unmarshal([]byte(s), &b)
		return b, err
	}
	decodeYAML := func(s string) (buildinfo.Info, error) {
		var b buildinfo.Info
		err := yaml.UnmarshalStrict([]byte(s), &b)
		return b, err
	}
	tests := []struct {
		name   string
		args   []string
		decode func(string) (buildinfo.Info, error) // nil: the text line
		code   int
	}{
		{name: "version", args: []string{"version"}},
		{name: "--version", args: []string{"--version"}},
		{name: "json", args: []string{"version", "-o", "json"}, decode: decodeJSON},
		{name: "yaml", args: []string{"version", "-o", "yaml"}, decode: decodeYAML},
		{name: "unknown format", args: []string{"version", "-o", "xml"}, code: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runRoot(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit code %d, want %d\nstderr:\n%s", code, tt.code, stderr)
			}
			switch {
			case tt.code != 0:
				if stdout != "" {
					t.Errorf("printed %q despite the error", stdout)
				}
			case tt.decode == nil:
				if stdout != want.String()+"\n" {
					t.Errorf("printed %q, want %q", stdout, want.String()+"\n")
				}
			default:
				got, err := tt.decode(stdout)
				if err != nil {
					t.Fatalf("decode %q: %v", stdout, err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("version (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestStampedVersion builds kubecel as make release does, without VCS information and
// with the linker stamping package main's version, revision and modified, and checks
// that kubecel version reports what was stamped.
func TestStampedVersion(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	bin := filepath.Join(t.TempDir(), "kubecel")
	ldflags := "-X main.version=v9.9.9-stamped -X main.revision=" + rev + " -X main.modified=true"
	args := append([]string{"build", "-buildvcs=false", "-ldflags", ldflags}, testenv.BuildArgs(bin, ".")[1:]...)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("kubecel version -o json: %v", err)
	}
	var got buildinfo.Info
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	want := buildinfo.Info{Version: "v9.9.9-stamped", Revision: rev, Dirty: true, GoVersion: got.GoVersion}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("version of the stamped binary (-want +got):\n%s", diff)
	}
}
