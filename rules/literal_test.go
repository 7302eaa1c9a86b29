package rules

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBuiltinKindsAreTypeChecked loads rules whose parents and children are built-in
// kinds, without Options.Schemas: the embedded schemas check them.
func TestBuiltinKindsAreTypeChecked(t *testing.T) {
	tests := []struct {
		name string
		rule string
		// crds adds the schemas of testdata/crds (WebApp, whose spec.image is a string).
		crds bool
		want []errView
	}{
		{
			name: "an expression of the wrong type in a Deployment",
			crds: true,
			rule: `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: deploy
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web}
      spec:
        replicas: ${parent.spec.image}
        template:
          spec:
            containers:
            - name: app
              image: ${parent.spec.image}
              ports:
              - containerPort: ${parent.spec.image}
`,
			want: []errView{
				{Line: 13, Rule: "web", Child: "deploy", Field: "template.spec.replicas", Expr: "${parent.spec.image}", Message: "the expression is of type string, but Deployment .spec.replicas is an integer"},
				{Line: 20, Rule: "web", Child: "deploy", Field: "template.spec.template.spec.containers[0].ports[0].containerPort", Expr: "${parent.spec.image}", Message: "the expression is of type string, but Deployment .spec.template.spec.containers[0].ports[0].containerPort is an integer"},
			},
		},
		{
			name: "literals of the wrong type",
			rule: `- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: svc
    template:
      apiVersion: v1
      kind: Service
      metadata: {name: web, labels: {tier: 3}}
      spec:
        ports:
        - port: "80"
          targetPort: http
        - port: 8080
          targetPort: 8080
          protocol: TCP
        publishNotReadyAddresses: "true"
        selector: {app: web}
  - id: cm
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: web}
      data: {enabled: true, list: [a]}
`,
			want: []errView{
				{Line: 11, Rule: "web", Child: "svc", Field: "template.metadata.labels.tier", Message: `Service .metadata.labels.tier is a string, but the template gives the number 3; quote it: "3"`},
				{Line: 14, Rule: "web", Child: "svc", Field: "template.spec.ports[0].port", Message: `Service .spec.ports[0].port is an integer, but the template gives the string "80"; write 80 without quotes`},
				{Line: 19, Rule: "web", Child: "svc", Field: "template.spec.publishNotReadyAddresses", Message: `Service .spec.publishNotReadyAddresses is a boolean, but the template gives the string "true"; write true without quotes`},
				{Line: 26, Rule: "web", Child: "cm", Field: "template.data.enabled", Message: "ConfigMap .data.enabled is a string, but the template gives the boolean true; quote the value if you meant a string (YAML 1.1 reads y, yes, on, n, no and off as booleans too)"},
				{Line: 26, Rule: "web", Child: "cm", Field: "template.data.list", Message: "ConfigMap .data.list is a string, but the template gives a list"},
			},
		},
		{
			name: "built-in parents are typed",
			rule: `- name: cms
  parent: {apiVersion: v1, resource: configmaps}
  children:
  - id: copies
    forEach: parent.data.names
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${parent.spec.name}"}
- name: pods
  parent: {apiVersion: v1, resource: pods, when: parent.status.podIp != ""}
  children:
  - id: svc
    template: {apiVersion: v1, kind: Service, metadata: {name: "${parent.metadata.name}"}}
`,
			want: []errView{
				{Line: 8, Rule: "cms", Child: "copies", Field: "forEach", Expr: "parent.data.names", Column: 1, Message: "must evaluate to a list, not string"},
				{Line: 12, Rule: "cms", Child: "copies", Field: "template.metadata.name", Expr: "${parent.spec.name}", Column: 9, Message: "undefined field 'spec'"},
				{Line: 14, Rule: "pods", Field: "parent.when", Expr: `parent.status.podIp != ""`, Column: 14, Message: "undefined field 'podIp' (did you mean 'podIP'?)"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts Options
			if tt.crds {
				opts.Schemas = testSchemas(t)
			}
			_, err := Load(ruleFile(tt.rule), opts)
			if diff := cmp.Diff(tt.want, viewErrors(t, err, tt.want)); diff != "" {
				t.Errorf("Load() errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidBuiltinChildrenLoad checks that what the API server accepts loads: quantities
// as strings and numbers, int-or-string ports, nulls, free-form fields.
func TestValidBuiltinChildrenLoad(t *testing.T) {
	_, err := Load(ruleFile(`- name: web
  parent: {apiVersion: example.com/v1, resource: webapps}
  children:
  - id: deploy
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web, labels: {app: web}, annotations: null}
      spec:
        replicas: 2
        selector: {matchLabels: {app: web}}
        strategy: {rollingUpdate: {maxSurge: 25%, maxUnavailable: 1}}
        template:
          metadata: {labels: {app: web}}
          spec:
            containers:
            - name: app
              image: nginx
              args: ["--port", "8080"]
              env: [{name: PORT, value: "8080"}]
              resources: {limits: {cpu: 500m, memory: 1Gi}, requests: {cpu: 0.5, memory: 1000000}}
              readinessProbe: {httpGet: {path: /, port: http}, periodSeconds: 5}
  - id: svc
    template:
      apiVersion: v1
      kind: Service
      metadata: {name: web}
      spec:
        ports: [{port: 80, targetPort: 8080}, {name: h, port: 81, targetPort: h}]
        selector: {app: web}
`), Options{})
	if err != nil {
		t.Fatalf("Load():\n%v", err)
	}
}
