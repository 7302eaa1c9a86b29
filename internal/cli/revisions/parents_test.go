package revisions

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubecel/kubecel/internal/rollout"
)

func TestParseParentResource(t *testing.T) {
	for in, want := range map[string]string{
		"example.com/v1/webapps": "example.com/v1, Resource=webapps",
		"/v1/pods":               "/v1, Resource=pods",
		"apps/v1/deployments":    "apps/v1, Resource=deployments",
	} {
		got, err := ParseParentResource(in)
		if err != nil || got.String() != want {
			t.Errorf("parseParentResource(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"webapps", "v1/pods", "example.com//webapps", "example.com/v1/", "a/b/c/d"} {
		_, err := ParseParentResource(in)
		want := `parent resource "` + in + `": want group/version/resource (/v1/pods for the core group)`
		if err == nil || err.Error() != want {
			t.Errorf("parseParentResource(%q): error %v, want %q", in, err, want)
		}
	}
}

func TestRolloutTexts(t *testing.T) {
	for _, tt := range []struct {
		s    rollout.State
		want string
	}{
		{rollout.State{Step: 2, Steps: []float64{1, 12.5, 100}}, "2 of 3 (12.5%)"},
		{rollout.State{Step: 3, Steps: []float64{1, 12.5, 100}}, "3 of 3 (100%)"},
		{rollout.State{Step: 2}, "2"},
		{rollout.State{Step: 4, Steps: []float64{50, 100}}, "4"},
	} {
		if got := StepText(tt.s); got != tt.want {
			t.Errorf("stepText(%+v) = %q, want %q", tt.s, got, tt.want)
		}
	}
}

func TestParentSelection(t *testing.T) {
	tests := []struct {
		name       string
		doc        string
		namespaces []string
		selector   string
		err        string
	}{
		{name: "no document"},
		{name: "every namespace", doc: `{"name":"web","parent":{"resource":"webapps"}}`},
		{name: "namespaces and selector", doc: `{"parent":{"namespaces":["a","b"],"selector":{"matchLabels":{"tier":"web"},"matchExpressions":[{"key":"env","operator":"In","values":["prod"]}]}}}`,
			namespaces: []string{"a", "b"}, selector: "env in (prod),tier=web"},
		{name: "not JSON", doc: `{`, err: "read its document: unexpected end of JSON input"},
		{name: "bad selector", doc: `{"parent":{"selector":{"matchExpressions":[{"key":"env","operator":"Near"}]}}}`, err: `its parent selector: "Near" is not a valid label selector operator`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns, sel, err := parentSelection([]byte(tt.doc))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.namespaces, ns); diff != "" || sel != tt.selector {
				t.Errorf("namespaces (-want +got):\n%s\nselector %q, want %q", diff, sel, tt.selector)
			}
		})
	}
}
