package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubecel/kubecel/internal/testenv"
)

// TestCheckKubeconfig type-checks against the CRDs of the test cluster (see TestMain:
// plan.kubecel.dev/v1 parts, whose spec.size is an integer).
func TestCheckKubeconfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rules.yaml")
	const rules = `apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: parts
    parent: {apiVersion: plan.kubecel.dev/v1, resource: parts}
    children:
      - id: cm
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
          data: {size: "${string(parent.spec.sise)}"}
`
	if err := os.WriteFile(file, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		// want are lines of the output.
		want []string
	}{
		{
			name: "with the cluster's CRDs",
			args: []string{"--rules", file, "--kubeconfig", testenv.ControlPlane(t).Kubeconfig},
			code: 1,
			want: []string{file + `:12: rule "parts" child "cm": template.data.size: ${string(parent.spec.sise)}: undefined field 'sise' (did you mean 'size'?)`},
		},
		{
			name: "without",
			args: []string{"--rules", file},
			want: []string{
				file + ": OK: 1 rule, 1 child, not type-checked: 1 parent",
				file + `: notice: rule "parts": parent: not type-checked: no schema for plan.kubecel.dev/v1/parts, so a misspelt parent field fails only when evaluated; give its CRD with --crds DIR, or --kubeconfig FILE to read a cluster's CRDs`,
			},
		},
		{
			name: "a kubeconfig that does not work",
			args: []string{"--rules", file, "--kubeconfig", filepath.Join(t.TempDir(), "missing")},
			code: 1,
			want: []string{"Error: read kubeconfig: "},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCommand(t, newCheckCommand(), tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			for _, line := range tt.want {
				if !strings.Contains(stdout+stderr, line) {
					t.Errorf("output lacks %q\nstdout:\n%s\nstderr:\n%s", line, stdout, stderr)
				}
			}
		})
	}
}
