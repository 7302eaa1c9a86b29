package rules_test

import (
	"testing"

	"github.com/kubecel/kubecel/rules"
)

func TestAssertion(t *testing.T) {
	vars := rules.AssertionVars{
		Parent: map[string]any{"spec": map[string]any{"replicas": int64(3)}},
		Children: map[string]any{
			"deployment": map[string]any{"spec": map[string]any{"replicas": int64(2)}},
			"configs":    []any{map[string]any{"metadata": map[string]any{"name": "a"}}},
		},
		Status: map[string]any{"url": "http://shop"},
		Ready:  true,
	}
	tests := []struct {
		expr, want string
	}{
		{expr: `ready && status.url.startsWith("http://")`},
		{expr: `size(children.configs) == 1`},
		{expr: `children.deployment.spec.replicas == parent.spec.replicas`,
			want: `children.deployment.spec.replicas == parent.spec.replicas: false (children.deployment.spec.replicas = 2; parent.spec.replicas = 3)`},
		{expr: `children.deployment.spec.replicas > 2`,
			want: `children.deployment.spec.replicas > 2: false (children.deployment.spec.replicas = 2)`},
		{expr: `"b" in children.configs.map(c, c.metadata.name)`,
			want: `"b" in children.configs.map(c, c.metadata.name): false (children.configs.map(c, c.metadata.name) = ["a"])`},
		{expr: `!ready`, want: `!ready: false`},
		{expr: `status.url`, want: `status.url: is "http://shop", not a bool`},
		{expr: `children.service.spec`, want: `children.service.spec: no such key: service`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			a, err := rules.CompileAssertion(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			err = a.Check(t.Context(), vars)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Check:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestCompileAssertionErrors(t *testing.T) {
	for expr, want := range map[string]string{
		`1 + 1`:      `1 + 1: must be a bool, not int`,
		`nothing.at`: "nothing.at: ERROR: <input>:1:1: undeclared reference to 'nothing' (in container '')\n | nothing.at\n | ^",
	} {
		_, err := rules.CompileAssertion(expr)
		if err == nil || err.Error() != want {
			t.Errorf("CompileAssertion(%q) = %v, want %s", expr, err, want)
		}
	}
}
