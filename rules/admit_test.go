package rules

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// TestAdmit admits WebApps of the webapp example's CRD as the API server would create
// them: defaults applied, and each kind of refusal named with the object and the field.
func TestAdmit(t *testing.T) {
	crds, err := SchemasFromCRDDir("../examples/webapp")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, spec string
		want       map[string]any // the admitted spec
		wantErr    string
	}{
		{name: "defaults", spec: `{image: nginx}`,
			want: map[string]any{"image": "nginx", "replicas": int64(1), "port": int64(8080), "expose": false}},
		{name: "given values stay", spec: `{image: nginx, replicas: 3, expose: true}`,
			want: map[string]any{"image": "nginx", "replicas": int64(3), "port": int64(8080), "expose": true}},
		{name: "a required field missing", spec: `{replicas: 2}`,
			wantErr: `WebApp.example.kubecel.dev "x" is invalid: spec.image: Required value`},
		{name: "a wrong type", spec: `{image: nginx, replicas: "2"}`,
			wantErr: `WebApp.example.kubecel.dev "x" is invalid: spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`},
		{name: "a bound", spec: `{image: nginx, replicas: 101}`,
			wantErr: `WebApp.example.kubecel.dev "x" is invalid: spec.replicas: Invalid value: 101: spec.replicas in body should be less than or equal to 100`},
		{name: "an unknown field", spec: `{image: nginx, replica: 2}`,
			wantErr: `WebApp.example.kubecel.dev "x": strict decoding error: unknown field "spec.replica"`},
		{name: "a validation rule", spec: `{image: nginx, host: shop.example.com}`,
			wantErr: `WebApp.example.kubecel.dev "x" is invalid: spec.host: Invalid value: spec.host needs spec.expose: true, because the Ingress routes to the Service`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var spec map[string]any
			js, err := yaml.YAMLToJSON([]byte(tt.spec))
			if err == nil {
				err = utiljson.Unmarshal(js, &spec) // integers as int64, as kubecel reads objects
			}
			if err != nil {
				t.Fatal(err)
			}
			obj := map[string]any{"apiVersion": "example.kubecel.dev/v1", "kind": "WebApp",
				"metadata": map[string]any{"name": "x", "namespace": "default"}, "spec": spec}
			before := cmp.Diff(nil, obj)
			got, err := crds.Admit(t.Context(), obj)
			if after := cmp.Diff(nil, obj); after != before {
				t.Error("Admit changed its argument")
			}
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Admit() error = %v\nwant %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got["spec"]); diff != "" {
				t.Errorf("admitted spec (-want +got):\n%s", diff)
			}
		})
	}
	// A kind the CRDs do not define is not theirs to judge.
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}, "dataa": 1}
	if got, err := crds.Admit(t.Context(), cm); err != nil || cmp.Diff(cm, got) != "" {
		t.Errorf("Admit(ConfigMap) = %v, %v; want it as it is", got, err)
	}
}
