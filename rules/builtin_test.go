package rules

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules/internal/builtin"
)

// TestBuiltinVersionIsTheControlPlanes fails when the control plane's pinned version
// (Makefile K8S_VERSION) changes without the embedded schemas being generated again.
func TestBuiltinVersionIsTheControlPlanes(t *testing.T) {
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^K8S_VERSION := (\S+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("no K8S_VERSION in the Makefile")
	}
	if got, want := BuiltinKubernetesVersion(), string(m[1]); got != want {
		t.Errorf("embedded schemas are of Kubernetes %q, the control plane is %s: run `make schemas`", got, want)
	}
}

// TestBuiltinVersionIsDocumented keeps the rules reference's type-checking section in
// step with the embedded schemas.
func TestBuiltinVersionIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(doc)), " ")
	if want := "embeds the schemas of the Kubernetes kinds it is built with (Kubernetes " + BuiltinKubernetesVersion() + ","; !strings.Contains(text, want) {
		t.Errorf("docs/rules.md does not say %q", want)
	}
}

func TestBuiltinSchemas(t *testing.T) {
	src := BuiltinSchemas()
	tests := []struct {
		gvk      schema.GroupVersionKind
		resource string
		// field is a path of properties that must be declared, and typ its type.
		field []string
		typ   string
	}{
		{gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, resource: "deployments",
			field: []string{"spec", "template", "spec", "containers", "[]", "ports", "[]", "containerPort"}, typ: "integer"},
		{gvk: schema.GroupVersionKind{Version: "v1", Kind: "Service"}, resource: "services",
			field: []string{"spec", "ports", "[]", "port"}, typ: "integer"},
		{gvk: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, resource: "configmaps",
			field: []string{"data", "{}"}, typ: "string"},
		{gvk: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, resource: "namespaces",
			field: []string{"metadata", "labels", "{}"}, typ: "string"},
		{gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, resource: "statefulsets",
			field: []string{"spec", "replicas"}, typ: "integer"},
		{gvk: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "CronJob"}, resource: "cronjobs",
			field: []string{"spec", "jobTemplate", "spec", "template", "spec", "restartPolicy"}, typ: "string"},
		{gvk: schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}, resource: "ingresses",
			field: []string{"spec", "rules", "[]", "host"}, typ: "string"},
	}
	for _, tt := range tests {
		t.Run(tt.gvk.Kind, func(t *testing.T) {
			s := src.KindSchema(tt.gvk)
			if s == nil {
				t.Fatalf("no schema for %v", tt.gvk)
			}
			if r := src.ResourceSchema(tt.gvk.GroupVersion().WithResource(tt.resource)); r != s {
				t.Errorf("ResourceSchema(%s) is not KindSchema(%s)", tt.resource, tt.gvk.Kind)
			}
			for _, step := range tt.field {
				switch step {
				case "[]":
					if s.Items == nil || s.Items.Schema == nil {
						t.Fatalf("%v: no items at %s", tt.field, step)
					}
					s = s.Items.Schema
				case "{}":
					if s.AdditionalProperties == nil || s.AdditionalProperties.Schema == nil {
						t.Fatalf("%v: no additionalProperties", tt.field)
					}
					s = s.AdditionalProperties.Schema
				default:
					p, ok := s.Properties[step]
					if !ok {
						t.Fatalf("%v: no property %s", tt.field, step)
					}
					s = &p
				}
			}
			if s.Type != tt.typ {
				t.Errorf("%v is of type %q, want %q", tt.field, s.Type, tt.typ)
			}
		})
	}
	targetPort := src.KindSchema(schema.GroupVersionKind{Version: "v1", Kind: "Service"}).
		Properties["spec"].Properties["ports"].Items.Schema.Properties["targetPort"]
	if !targetPort.XIntOrString {
		t.Errorf("Service .spec.ports[].targetPort is not int-or-string: %+v", targetPort)
	}
	if src.KindSchema(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "WebApp"}) != nil {
		t.Error("a schema for a kind that is not built in")
	}
}

func TestBuiltinFileDecodes(t *testing.T) {
	f, err := builtin.Decode(builtinData)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range f.Kinds {
		if _, ok := f.Definitions[k.Schema]; !ok {
			t.Errorf("kind %s: no definition %s", k.Kind, k.Schema)
		}
	}
	if len(f.Kinds) < 30 {
		t.Errorf("%d kinds, want the workloads, networking, policy, RBAC, autoscaling and storage kinds", len(f.Kinds))
	}
}

// TestTypeChecked pins down what check reports as type-checked or not.
func TestTypeChecked(t *testing.T) {
	rs, err := Load(ruleFile(`- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: deploy
    template: {apiVersion: apps/v1, kind: Deployment, metadata: {name: x}}
  - id: backend
    template: {apiVersion: example.com/v1, kind: Backend, metadata: {name: x}}
  - id: cm
    expr: '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}'
- name: pods
  parent: {apiVersion: v1, resource: pods}
  children:
  - id: svc
    template: {apiVersion: v1, kind: Service, metadata: {name: x}}
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range rs.Rules {
		got[r.Name] = r.ParentTypeChecked()
		for _, c := range r.Children {
			got[r.Name+"/"+c.ID] = c.TypeChecked()
		}
	}
	want := map[string]bool{"web": false, "web/deploy": true, "web/backend": false, "web/cm": true, "pods": true, "pods/svc": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("type-checked (-want +got):\n%s", diff)
	}
}

// BenchmarkBuiltinFirstLookup is the one-time cost of the first lookup of a built-in
// kind: decoding the embedded file and resolving every kind's schema. (Resolving each
// kind on its own first lookup instead keeps the unresolved definitions in memory: 1.6 MB
// retained for a Deployment alone, against 1.0 MB for all 40 kinds resolved at once.)
func BenchmarkBuiltinFirstLookup(b *testing.B) {
	for b.Loop() {
		if decodeBuiltins().version == "" {
			b.Fatal("no version")
		}
	}
}

// BenchmarkLoadWithBuiltinKinds loads the rules reference's rule (a Deployment, a Service
// and ConfigMaps, all checked against the embedded schemas) once they are decoded.
func BenchmarkLoadWithBuiltinKinds(b *testing.B) {
	data := ruleFile(webappRule)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(data, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
