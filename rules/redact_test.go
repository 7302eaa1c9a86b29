package rules

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubecel/kubecel/rules/internal/celjson"
)

func TestRedactSecrets(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]any
		want map[string]any
	}{
		{
			name: "secret values are replaced, keys kept",
			in: map[string]any{
				"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"},
				"data": map[string]any{"password": "aHVudGVyMg=="}, "stringData": map[string]any{"token": "t0k3n"}, "type": "Opaque",
			},
			want: map[string]any{
				"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"},
				"data": map[string]any{"password": Redacted}, "stringData": map[string]any{"token": Redacted}, "type": "Opaque",
			},
		},
		{
			name: "malformed data is hidden whole",
			in:   map[string]any{"apiVersion": "v1", "kind": "Secret", "data": "oops"},
			want: map[string]any{"apiVersion": "v1", "kind": "Secret", "data": Redacted},
		},
		{
			name: "other kinds are untouched",
			in:   map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"password": "visible"}},
			want: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"password": "visible"}},
		},
		{
			name: "a Secret kind of another group is not a core Secret",
			in:   map[string]any{"apiVersion": "example.com/v1", "kind": "Secret", "data": map[string]any{"a": "b"}},
			want: map[string]any{"apiVersion": "example.com/v1", "kind": "Secret", "data": map[string]any{"a": "b"}},
		},
		{name: "nil", in: nil, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := cloneJSON(t, tt.in)
			got := RedactSecrets(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("RedactSecrets() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.in); diff != "" {
				t.Errorf("RedactSecrets() modified its input (-before +after):\n%s", diff)
			}
		})
	}
}

func cloneJSON(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	if m == nil {
		return nil
	}
	b := memory.Budget(DefaultMaxEvalBytes)
	c, err := celjson.CopyJSON(m, &b)
	if err != nil {
		t.Fatal(err)
	}
	return c.(map[string]any)
}
