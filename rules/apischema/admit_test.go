package apischema

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestAdmit(t *testing.T) {
	d := parse(t, website+`types: {}
validation:
  - expression: "self.replicas <= 10 || self.tier == 'api'"
    message: only api sites run more than 10 replicas
`)
	obj := func(spec map[string]any) map[string]any {
		o := map[string]any{"apiVersion": "sites.example.com/v1", "kind": "Website", "metadata": map[string]any{"name": "shop", "namespace": "default"}}
		if spec != nil {
			o["spec"] = spec
		}
		return o
	}
	for _, tc := range []struct {
		name     string
		in       map[string]any
		wantSpec map[string]any
		dropped  []string
		err      []string
	}{
		{name: "defaults", in: obj(map[string]any{"image": "nginx"}), wantSpec: map[string]any{"image": "nginx", "replicas": int64(1), "tier": "web"}},
		{name: "given values stay", in: obj(map[string]any{"image": "nginx", "replicas": int64(3), "tier": "api"}), wantSpec: map[string]any{"image": "nginx", "replicas": int64(3), "tier": "api"}},
		{name: "unknown field dropped", in: obj(map[string]any{"image": "nginx", "replcas": int64(3)}), wantSpec: map[string]any{"image": "nginx", "replicas": int64(1), "tier": "web"}, dropped: []string{"spec.replcas"}},
		{name: "required", in: obj(map[string]any{"replicas": int64(2)}), err: []string{"spec.image: Required value"}},
		{name: "no spec", in: obj(nil), err: []string{"spec: Required value"}},
		{name: "minimum", in: obj(map[string]any{"image": "x", "replicas": int64(0)}), err: []string{"spec.replicas: Invalid value: 0", "greater than or equal to 1"}},
		{name: "enum", in: obj(map[string]any{"image": "x", "tier": "db"}), err: []string{`spec.tier: Unsupported value: "db"`}},
		{name: "type", in: obj(map[string]any{"image": int64(3)}), err: []string{"spec.image: Invalid value"}},
		{name: "rule", in: obj(map[string]any{"image": "x", "replicas": int64(20)}), err: []string{"only api sites run more than 10 replicas"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.DeepCopyJSON(tc.in)
			got, err := d.Admit(tc.in)
			if diff := cmp.Diff(before, tc.in); diff != "" {
				t.Errorf("Admit changed its input (-before +after):\n%s", diff)
			}
			if len(tc.err) > 0 {
				if err == nil {
					t.Fatalf("admitted %v", got.Object)
				}
				for _, want := range tc.err {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantSpec, got.Object["spec"]); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.dropped, got.Dropped); diff != "" {
				t.Errorf("dropped (-want +got):\n%s", diff)
			}
		})
	}
}
