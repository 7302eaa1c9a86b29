package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestCheck(t *testing.T) {
	const dir = "testdata/check"
	crds := "../../rules/testdata/crds"
	tests := []struct {
		name  string
		args  []string
		stdin string // a file given as the standard input
		code  int
	}{
		{name: "ok", args: []string{"--rules", "testdata/render/rules.yaml", "--crds", crds}},
		{name: "every-problem", args: []string{"--rules", dir + "/broken.yaml", "--crds", crds}, code: 1},
		{name: "sensitive-kinds-and-unknown-schema", args: []string{"--rules", dir + "/sensitive.yaml", "--crds", crds}},
		{name: "yaml-booleans", args: []string{"--rules", dir + "/booleans.yaml", "--crds", crds}},
		{name: "cluster-scoped-child", args: []string{"--rules", dir + "/scope.yaml", "--crds", crds}, code: 1},
		{name: "bad-max-children", args: []string{"--rules", dir + "/booleans.yaml", "--max-children", "-1"}, code: 1},
		{name: "missing-file", args: []string{"--rules", dir + "/missing.yaml"}, code: 1},
		{name: "bad-crds", args: []string{"--rules", dir + "/sensitive.yaml", "--crds", dir}, code: 1},
		// Built-in kinds are type-checked without --crds; what is not is said.
		{name: "builtin-kinds", args: []string{"--rules", dir + "/builtin.yaml", "--crds", crds}, code: 1},
		{name: "not-type-checked", args: []string{"--rules", dir + "/untyped.yaml", "--crds", crds}},
		{name: "not-type-checked-without-crds", args: []string{"--rules", dir + "/untyped.yaml"}},
		{name: "json-not-type-checked", args: []string{"--rules", dir + "/untyped.yaml", "--crds", crds, "-o", "json"}},
		{name: "tab", args: []string{"--rules", "testdata/tab.yaml"}, code: 1},
		{name: "crds-and-kubeconfig", args: []string{"--rules", dir + "/untyped.yaml", "--crds", crds, "--kubeconfig", "x"}, code: 1},
		// -o json: diagnostics for machines, on stdout; the exit status does not change.
		{name: "json-every-problem", args: []string{"--rules", dir + "/broken.yaml", "--crds", crds, "-o", "json"}, code: 1},
		{name: "json-warnings", args: []string{"--rules", dir + "/sensitive.yaml", "--crds", crds, "-o", "json"}},
		{name: "json-booleans", args: []string{"--rules", dir + "/booleans.yaml", "--crds", crds, "-o", "json"}},
		{name: "yaml-ok", args: []string{"--rules", "testdata/render/rules.yaml", "--crds", crds, "-o", "yaml"}},
		{name: "bad-output", args: []string{"--rules", "testdata/render/rules.yaml", "-o", "xml"}, code: 1},
		// --rules - reads the standard input.
		{name: "stdin", args: []string{"--rules", "-", "--crds", crds}, stdin: dir + "/booleans.yaml"},
		{name: "stdin-json-every-problem", args: []string{"--rules", "-", "--crds", crds, "-o", "json"}, stdin: dir + "/broken.yaml", code: 1},
		// --rules is repeatable and takes directories: all documents load as one rule set.
		{name: "directory", args: []string{"--rules", dir + "/many", "--crds", crds}},
		{name: "stdin-and-directory", args: []string{"--rules", "-", "--rules", dir + "/many"}, stdin: dir + "/booleans.yaml"},
		{name: "duplicate-across-files", args: []string{"--rules", dir + "/many", "--rules", dir + "/duplicate.yaml", "--crds", crds}, code: 1},
		{name: "json-duplicate-across-files", args: []string{"--rules", dir + "/many", "--rules", dir + "/duplicate.yaml", "--crds", crds, "-o", "json"}, code: 1},
		{name: "stdin-twice", args: []string{"--rules", "-", "--rules", "-"}, stdin: dir + "/booleans.yaml", code: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := newCheckCommand()
			if tt.stdin != "" {
				data, err := os.ReadFile(tt.stdin)
				if err != nil {
					t.Fatal(err)
				}
				cmd.SetIn(bytes.NewReader(data))
			}
			stdout, stderr, code := runCommand(t, cmd, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tt.code, stderr)
			}
			golden(t, filepath.Join(dir, "golden", tt.name+".txt"), transcript(stdout, stderr, code))
		})
	}
}
