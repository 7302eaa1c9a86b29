package main

import (
	"path/filepath"
	"testing"
)

func TestCheck(t *testing.T) {
	const dir = "testdata/check"
	crds := "../../rules/testdata/crds"
	tests := []struct {
		name string
		args []string
		code int
	}{
		{name: "ok", args: []string{"--rules", "testdata/render/rules.yaml", "--crds", crds}},
		{name: "every-problem", args: []string{"--rules", dir + "/broken.yaml", "--crds", crds}, code: 1},
		{name: "sensitive-kinds-and-unknown-schema", args: []string{"--rules", dir + "/sensitive.yaml", "--crds", crds}},
		{name: "yaml-booleans", args: []string{"--rules", dir + "/booleans.yaml", "--crds", crds}},
		{name: "cluster-scoped-child", args: []string{"--rules", dir + "/scope.yaml", "--crds", crds}, code: 1},
		{name: "bad-max-children", args: []string{"--rules", dir + "/booleans.yaml", "--max-children", "-1"}, code: 1},
		{name: "missing-file", args: []string{"--rules", dir + "/missing.yaml"}, code: 1},
		{name: "bad-crds", args: []string{"--rules", dir + "/sensitive.yaml", "--crds", dir}, code: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCommand(t, newCheckCommand(), tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tt.code, stderr)
			}
			golden(t, filepath.Join(dir, "golden", tt.name+".txt"), transcript(stdout, stderr, code))
		})
	}
}
