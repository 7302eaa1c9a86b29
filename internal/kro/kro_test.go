package kro

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/rules"
)

// objects reads a multi-document YAML string.
func objects(t *testing.T, src string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, doc := range strings.Split(src, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var m map[string]any
		if err := sigsyaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// TestConvert converts RGDs written after kro's documented examples, renders the rule
// for an instance (admitted as the API server would: kro's defaults), and compares the
// children with those the RGD describes for that instance.
func TestConvert(t *testing.T) {
	tests := []struct {
		file     string
		parent   string
		observed string
		want     string // the children, as the RGD makes them for parent
		notes    []string
	}{{
		file: "webapp.yaml",
		parent: `
apiVersion: kro.run/v1alpha1
kind: WebApp
metadata: {name: shop, namespace: team-a}
spec:
  name: shop
  ingress: {enabled: true}
`,
		// The Deployment exists and is ready: the Service reads its selector, the
		// Ingress the Service's name.
		observed: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: shop, namespace: team-a, labels: {kubecel.dev/child: deployment}}
spec: {replicas: 2, selector: {matchLabels: {app: shop}}}
status: {availableReplicas: 2}
---
apiVersion: v1
kind: Service
metadata: {name: shop-svc, namespace: team-a, labels: {kubecel.dev/child: service}}
spec: {clusterIP: 10.96.0.10}
`,
		want: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      containers:
        - name: web
          image: nginx:1.27
          ports: [{containerPort: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: shop-svc}
spec:
  selector: {app: shop}
  ports: [{port: 80, targetPort: 80}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop-ingress}
spec:
  rules:
    - host: example.com
      http:
        paths:
          - path: /
            pathType: Prefix
            backend: {service: {name: shop-svc, port: {number: 80}}}
`,
		notes: []string{`status.url: declared as string; kro infers its type from ${"http://" + schema.spec.ingress.host + "/" + schema.spec.name}, so check it`},
	}, {
		file: "workers.yaml",
		parent: `
apiVersion: pools.example.com/v1alpha1
kind: WorkerPool
metadata: {name: pool, namespace: team-a}
spec: {image: worker:2, queues: [emails, reports]}
`,
		observed: `
apiVersion: v1
kind: ConfigMap
metadata: {name: platform-settings, namespace: team-a, resourceVersion: "42"}
data: {region: eu-west}
`,
		want: `
apiVersion: v1
kind: ConfigMap
metadata: {name: pool-emails}
data: {queue: emails, image: "worker:2", region: eu-west, note: "queue is a word here, and so is schema"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: pool-reports}
data: {queue: reports, image: "worker:2", region: eu-west, note: "queue is a word here, and so is schema"}
`,
		notes: []string{`the rule is named "worker-pool": rule names are DNS labels, and the definition is "worker.pool"`},
	}}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Convert(data)
			if err != nil {
				t.Fatal(err)
			}
			if got.Load != nil {
				t.Fatalf("the converted rules do not load: %v\n%s", got.Load, got.Rules)
			}
			if diff := cmp.Diff(tt.notes, got.Notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			rs, err := rules.Load(got.Rules, rules.Options{})
			if err != nil {
				t.Fatal(err)
			}
			admitted, err := rs.Admit(objects(t, tt.parent)[0])
			if err != nil || admitted == nil {
				t.Fatalf("admit the parent: %v %v", admitted, err)
			}
			r := rs.Rules[0]
			gr := schema.GroupResource{Group: r.Parent.GVR.Group, Resource: r.Parent.GVR.Resource}
			res, err := r.EvaluateObserved(t.Context(), admitted.Object, rules.ParentRefOf(admitted.Object, gr, true), objects(t, tt.observed))
			if err != nil {
				t.Fatalf("evaluate: %v\n%s", err, got.Rules)
			}
			var children []map[string]any
			for _, d := range res.Children {
				children = append(children, d.Object)
			}
			if diff := cmp.Diff(jsonOf(t, objects(t, tt.want)), jsonOf(t, children)); diff != "" {
				t.Errorf("children (-want +got):\n%s\nrules:\n%s", diff, got.Rules)
			}
		})
	}
}

// jsonOf is v as JSON decodes it (every number a float64), for comparing objects read
// from YAML with objects CEL made.
func jsonOf(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRewrite(t *testing.T) {
	n := names{"schema": "parent", "deployment": "children.deployment", "cfg": "refs.cfg", "item": "each"}
	tests := []struct{ in, want string }{
		{"schema.spec.x", "parent.spec.x"},
		{"deployment.status.replicas == schema.spec.replicas", "children.deployment.status.replicas == parent.spec.replicas"},
		{`"schema" + 'deployment' + schema.metadata.name`, `"schema" + 'deployment' + parent.metadata.name`},
		{"parent.spec.schema", "parent.spec.schema"},
		{"item.name + cfg.data.x", "each.name + refs.cfg.data.x"},
		{"schema.spec.list.map(item, item.x)", "parent.spec.list.map(each, each.x)"},
	}
	for _, tt := range tests {
		if got := n.rewrite(tt.in); got != tt.want {
			t.Errorf("rewrite(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got, want := n.template("${schema.metadata.name}-${item}-x"), "${parent.metadata.name}-${each}-x"; got != want {
		t.Errorf("template = %q, want %q", got, want)
	}
	if got, want := n.bare("${deployment.status.ready == true}"), "children.deployment.status.ready == true"; got != want {
		t.Errorf("bare = %q, want %q", got, want)
	}
}

func TestConvertErrors(t *testing.T) {
	for _, src := range []string{"kind: Deployment", "kind: ResourceGraphDefinition\nspec: {}", ": not yaml ["} {
		if _, err := Convert([]byte(src)); err == nil {
			t.Errorf("Convert(%q): no error", src)
		}
	}
}

// TestConvertNotes: what is not converted is said.
func TestConvertNotes(t *testing.T) {
	got, err := Convert([]byte(`
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: pairs}
spec:
  schema:
    apiVersion: v1
    kind: Pair
    spec: {a: "[]string", b: "[]string"}
    status:
      nested: {x: "${schema.spec.a}"}
  resources:
    - id: pairs
      forEach: [{x: "${schema.spec.a}"}, {y: "${schema.spec.b}"}]
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${x + y}"}}
    - id: odd
      somethingNew: true
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`resource "pairs": forEach with more than one iterator (kro takes their cartesian product) is not converted: the child is made once; write its forEach by hand`,
		`resource "odd": somethingNew is not converted`,
		`resource "odd" has neither template nor externalRef: left out`,
		`status.nested is a nested object: not converted; write it as top-level fields`,
	}
	if diff := cmp.Diff(want, got.Notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}
