package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// TestRBACOutput: -o json prints the role that the YAML shows, and --rules - reads the
// rules from the standard input.
func TestRBACOutput(t *testing.T) {
	noCluster(t)
	rulesYAML := ruleSet(webappRule)
	file := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(file, []byte(rulesYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runRoot(t, "rbac", "--rules", file)
	if code != 0 {
		t.Fatalf("rbac: exit %d\n%s", code, stderr)
	}
	var want rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict([]byte(stdout), &want); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		stdin   string
		args    []string
		decode  func([]byte, any) error
		wantErr string
	}{
		{name: "json", args: []string{"--rules", file, "-o", "json"}, decode: json.Unmarshal},
		{name: "yaml from stdin", stdin: rulesYAML, args: []string{"--rules", "-"}, decode: func(b []byte, v any) error { return yaml.UnmarshalStrict(b, v) }},
		{name: "json from stdin", stdin: rulesYAML, args: []string{"--rules", "-", "-o", "json"}, decode: json.Unmarshal},
		{name: "stdin names itself", stdin: "rules: [", args: []string{"--rules", "-"}, wantErr: "load rules:\n<stdin>:1: invalid YAML"},
		{name: "unknown format", args: []string{"--rules", file, "-o", "text"}, wantErr: `unknown output format "text": use yaml or json`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runRootIn(t, tt.stdin, append([]string{"rbac"}, tt.args...)...)
			if tt.wantErr != "" {
				if code != 1 || !strings.Contains(stderr, tt.wantErr) || stdout != "" {
					t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing and an error with %q", code, stdout, stderr, tt.wantErr)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			var got rbacv1.ClusterRole
			if err := tt.decode([]byte(stdout), &got); err != nil {
				t.Fatalf("decode: %v\n%s", err, stdout)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("role (-yaml from the file +got):\n%s", diff)
			}
		})
	}
}
