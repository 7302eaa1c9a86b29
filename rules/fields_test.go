package rules

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// gadgetCRD has a field of each shape the field check must tell apart: nested objects,
// lists and maps of objects, free-form and partly declared objects, maps of strings,
// embedded resources, an int-or-string, and a status.
const gadgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.fields.kubecel.dev}
spec:
  group: fields.kubecel.dev
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              mode: {type: string}
              nested: {type: object, properties: {deep: {type: object, properties: {value: {type: string}}}}}
              items: {type: array, items: {type: object, properties: {name: {type: string}, port: {type: integer}}}}
              byName: {type: object, additionalProperties: {type: object, properties: {weight: {type: integer}}}}
              free: {type: object, x-kubernetes-preserve-unknown-fields: true}
              partial: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {declared: {type: string}}}
              labels: {type: object, additionalProperties: {type: string}}
              anything: {type: object, additionalProperties: true}
              port: {x-kubernetes-int-or-string: true}
              embedded: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
              shaped:
                type: object
                x-kubernetes-embedded-resource: true
                properties: {spec: {type: object, properties: {x: {type: integer}}}}
          status:
            type: object
            properties:
              phase: {type: string}
              observedGeneration: {type: integer}
              conditions: {type: array, items: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

func gadgetSchemas(t *testing.T) *CRDSchemas {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(gadgetCRD), crd); err != nil {
		t.Fatal(err)
	}
	return SchemasFromCRDs(crd)
}

// fieldsRule is a rules file of one rule on Gadgets with one child "c" (given as the
// YAML of the child's entry after its id, on one line), and optionally refs and status.
func fieldsRule(child, extra string) []byte {
	return fmt.Appendf(nil, `apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
- name: r
  parent: {apiVersion: fields.kubecel.dev/v1, resource: gadgets}
  children:
  - {id: c, %s}
%s`, child, extra)
}

// TestTemplateFieldMistakes loads rules with one mistake each, as the API server would
// refuse it, and checks the whole message: document and line, rule, child, path, and
// what to write instead.
func TestTemplateFieldMistakes(t *testing.T) {
	const deploy = `template: {apiVersion: apps/v1, kind: Deployment, metadata: {name: x}, spec: %s}`
	const pod = `template: {apiVersion: apps/v1, kind: Deployment, metadata: {name: x}, spec: {template: {spec: %s}}}`
	const gadget = `template: {apiVersion: fields.kubecel.dev/v1, kind: Gadget, metadata: {name: x}, spec: %s}`
	const at = `rules.yaml:7: rule "r" child "c": `
	tests := []struct {
		name, child, extra, want string
	}{
		// Typos in built-in kinds, at every depth.
		{"deployment spec", fmt.Sprintf(deploy, `{replica: 2}`), "",
			at + `template.spec.replica: unknown field (did you mean 'replicas'?): Deployment .spec declares no field "replica", and the API server refuses undeclared fields`},
		{"deployment selector", fmt.Sprintf(deploy, `{selecter: {matchLabels: {a: b}}}`), "",
			at + `template.spec.selecter: unknown field (did you mean 'selector'?): Deployment .spec declares no field "selecter", and the API server refuses undeclared fields`},
		{"nothing near: the fields are listed", fmt.Sprintf(deploy, `{zzz: 1}`), "",
			at + `template.spec.zzz: unknown field: Deployment .spec declares no field "zzz", and the API server refuses undeclared fields; it declares 'minReadySeconds', 'paused', 'progressDeadlineSeconds', 'replicas', 'revisionHistoryLimit', 'selector', 'strategy' and 'template'`},
		{"nothing near among many: the nearest", fmt.Sprintf(pod, `{xyzzy: 1}`), "",
			at + `template.spec.template.spec.xyzzy: unknown field: Deployment .spec.template.spec declares no field "xyzzy", and the API server refuses undeclared fields; the nearest of its 42 fields are 'os', 'affinity', 'hostIPC' and 'hostPID'`},
		{"a volume in a list", fmt.Sprintf(pod, `{volumes: [{name: a, emptyDir: {}}, {nme: b}]}`), "",
			at + `template.spec.template.spec.volumes[1].nme: unknown field (did you mean 'name'?): Deployment .spec.template.spec.volumes[1] declares no field "nme", and the API server refuses undeclared fields`},
		{"a container field", fmt.Sprintf(pod, `{containers: [{name: c, imagePullPolice: Always}]}`), "",
			at + `template.spec.template.spec.containers[0].imagePullPolice: unknown field (did you mean 'imagePullPolicy'?): Deployment .spec.template.spec.containers[0] declares no field "imagePullPolice", and the API server refuses undeclared fields`},
		{"ports, not port", fmt.Sprintf(pod, `{containers: [{name: c, port: [{containerPort: 80}]}]}`), "",
			at + `template.spec.template.spec.containers[0].port: unknown field (did you mean 'ports'?): Deployment .spec.template.spec.containers[0] declares no field "port", and the API server refuses undeclared fields`},
		{"resources", fmt.Sprintf(pod, `{containers: [{name: c, resources: {limit: {cpu: 1}}}]}`), "",
			at + `template.spec.template.spec.containers[0].resources.limit: unknown field (did you mean 'limits'?): Deployment .spec.template.spec.containers[0].resources declares no field "limit", and the API server refuses undeclared fields`},
		{"seven levels down", fmt.Sprintf(pod, `{containers: [{name: c, env: [{name: A, valueFrom: {secretKeyRef: {nam: s, key: k}}}]}]}`), "",
			at + `template.spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.nam: unknown field (did you mean 'name'?): Deployment .spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef declares no field "nam", and the API server refuses undeclared fields`},
		{"rolling update", fmt.Sprintf(deploy, `{strategy: {rollingUpdate: {maxSurg: 1}}}`), "",
			at + `template.spec.strategy.rollingUpdate.maxSurg: unknown field (did you mean 'maxSurge'?): Deployment .spec.strategy.rollingUpdate declares no field "maxSurg", and the API server refuses undeclared fields`},
		{"metadata is ObjectMeta", `template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, lables: {a: b}}}`, "",
			at + `template.metadata.lables: unknown field (did you mean 'labels'?): ConfigMap .metadata declares no field "lables", and the API server refuses undeclared fields`},
		{"a pod template's metadata", fmt.Sprintf(deploy, `{template: {metadata: {annotation: {a: b}}}}`), "",
			at + `template.spec.template.metadata.annotation: unknown field (did you mean 'annotations'?): Deployment .spec.template.metadata declares no field "annotation", and the API server refuses undeclared fields`},
		{"configmap top level", `template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}, datas: {a: b}}`, "",
			at + `template.datas: unknown field (did you mean 'data'?): ConfigMap declares no field "datas", and the API server refuses undeclared fields`},
		{"service ports", `template: {apiVersion: v1, kind: Service, metadata: {name: x}, spec: {ports: [{port: 80, targetport: 8080}]}}`, "",
			at + `template.spec.ports[0].targetport: unknown field (did you mean 'targetPort'?): Service .spec.ports[0] declares no field "targetport", and the API server refuses undeclared fields`},
		{"ingress backend", `template: {apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: x}, spec: {rules: [{http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: s, port: {numbr: 80}}}}]}}]}}`, "",
			at + `template.spec.rules[0].http.paths[0].backend.service.port.numbr: unknown field (did you mean 'number'?): Ingress .spec.rules[0].http.paths[0].backend.service.port declares no field "numbr", and the API server refuses undeclared fields`},
		{"cronjob, nine levels down", `template: {apiVersion: batch/v1, kind: CronJob, metadata: {name: x}, spec: {schedule: "@daily", jobTemplate: {spec: {template: {spec: {restartPolice: Never}}}}}}`, "",
			at + `template.spec.jobTemplate.spec.template.spec.restartPolice: unknown field (did you mean 'restartPolicy'?): CronJob .spec.jobTemplate.spec.template.spec declares no field "restartPolice", and the API server refuses undeclared fields`},
		{"role rules", `template: {apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: x}, rules: [{apiGroups: [""], resources: [pods], verb: [get]}]}`, "",
			at + `template.rules[0].verb: unknown field (did you mean 'verbs'?): Role .rules[0] declares no field "verb", and the API server refuses undeclared fields`},
		// Wrong types, where they are known statically.
		{"a quoted integer", fmt.Sprintf(deploy, `{replicas: "3"}`), "",
			at + `template.spec.replicas: Deployment .spec.replicas is an integer, but the template gives the string "3"; write 3 without quotes`},
		{"a number for a string", `template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {count: 1}}`, "",
			at + `template.data.count: ConfigMap .data.count is a string, but the template gives the number 1; quote it: "1"`},
		{"an expression of the wrong type", fmt.Sprintf(deploy, `{replicas: "${parent.metadata.name}"}`), "",
			at + `template.spec.replicas: ${parent.metadata.name}: the expression is of type string, but Deployment .spec.replicas is an integer`},
		{"text where an integer goes", fmt.Sprintf(deploy, `{replicas: "n${parent.metadata.name}"}`), "",
			at + `template.spec.replicas: n${parent.metadata.name}: text with ${} is a string, but Deployment .spec.replicas is an integer; make the field exactly ${...} to keep the value's type`},
		{"a list where a map goes", `template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, labels: [a]}}`, "",
			at + `template.metadata.labels: ConfigMap .metadata.labels is an object, but the template gives a list`},
		// What an expression builds as literals.
		{"a typo in an expr's map literal", `expr: '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "dat": {}}'`, "",
			at + `expr: {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "dat": {}}: unknown field (did you mean 'data'?): ConfigMap declares no field "dat", and the API server refuses undeclared fields`},
		{"a type in an expr's map literal", `expr: '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"n": 1}}'`, "",
			at + `expr: {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"n": 1}}: the expression is of type int, but ConfigMap .data.n is a string`},
		{"a list in an expr", `expr: '{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}, "spec": {"ports": [{"port": 80}, {"prot": 81}]}}'`, "",
			at + `expr: {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}, "spec": {"ports": [{"port": 80}, {"prot": 81}]}}: unknown field (did you mean 'port'?): Service .spec.ports[1] declares no field "prot", and the API server refuses undeclared fields`},
		{"a map literal in a template's ${}", fmt.Sprintf(deploy, `'${ {"replica": 1} }'`), "",
			at + `template.spec: ${ {"replica": 1} }: unknown field (did you mean 'replicas'?): Deployment .spec declares no field "replica", and the API server refuses undeclared fields`},
		{"both branches of a conditional", fmt.Sprintf(deploy, `'${ parent.metadata.name == "a" ? {"replicas": 1} : {"replica": 2} }'`), "",
			at + `template.spec: ${ parent.metadata.name == "a" ? {"replicas": 1} : {"replica": 2} }: unknown field (did you mean 'replicas'?): Deployment .spec declares no field "replica", and the API server refuses undeclared fields`},
		// Kinds and resources that an embedded group-version does not have.
		{"a plural kind", `template: {apiVersion: apps/v1, kind: Deployments, metadata: {name: x}}`, "",
			at + `template.kind: unknown kind (did you mean 'Deployment'?): apps/v1 has no kind "Deployments"`},
		{"a kind of another group", `template: {apiVersion: v1, kind: HorizontalPodAutoscaler, metadata: {name: x}}`, "",
			at + `template.kind: unknown kind: v1 has no kind "HorizontalPodAutoscaler"; HorizontalPodAutoscaler is in apiVersion: autoscaling/v2`},
		{"an expr's kind", `expr: '{"apiVersion": "v1", "kind": "ConfigMaps", "metadata": {"name": "x"}}'`, "",
			at + `expr: unknown kind (did you mean 'ConfigMap'?): v1 has no kind "ConfigMaps"`},
		{"a ref's kind", `template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}`, "  refs: [{id: s, apiVersion: v1, kind: Secrets, name: x}]",
			`rules.yaml:8: rule "r" ref "s": kind: unknown kind (did you mean 'Secret'?): v1 has no kind "Secrets"`},
		// Custom resources.
		{"crd spec", fmt.Sprintf(gadget, `{sise: 1}`), "",
			at + `template.spec.sise: unknown field (did you mean 'size'?): Gadget .spec declares no field "sise", and the API server refuses undeclared fields`},
		{"crd root", `template: {apiVersion: fields.kubecel.dev/v1, kind: Gadget, metadata: {name: x}, spc: {}}`, "",
			at + `template.spc: unknown field (did you mean 'spec'?): Gadget declares no field "spc", and the API server refuses undeclared fields`},
		{"crd metadata is ObjectMeta", `template: {apiVersion: fields.kubecel.dev/v1, kind: Gadget, metadata: {name: x, namepsace: y}}`, "",
			at + `template.metadata.namepsace: unknown field (did you mean 'namespace'?): Gadget .metadata declares no field "namepsace", and the API server refuses undeclared fields`},
		{"crd nested", fmt.Sprintf(gadget, `{nested: {deep: {valeu: a}}}`), "",
			at + `template.spec.nested.deep.valeu: unknown field (did you mean 'value'?): Gadget .spec.nested.deep declares no field "valeu", and the API server refuses undeclared fields`},
		{"crd list of objects", fmt.Sprintf(gadget, `{items: [{name: a, port: 1}, {name: b, prot: 2}]}`), "",
			at + `template.spec.items[1].prot: unknown field (did you mean 'port'?): Gadget .spec.items[1] declares no field "prot", and the API server refuses undeclared fields`},
		{"crd map of objects", fmt.Sprintf(gadget, `{byName: {a: {weight: 1}, b: {wieght: 2}}}`), "",
			at + `template.spec.byName.b.wieght: unknown field (did you mean 'weight'?): Gadget .spec.byName.b declares no field "wieght", and the API server refuses undeclared fields`},
		{"crd type in a partly declared object", fmt.Sprintf(gadget, `{partial: {declared: 3, other: 4}}`), "",
			at + `template.spec.partial.declared: Gadget .spec.partial.declared is a string, but the template gives the number 3; quote it: "3"`},
		{"crd map of strings", fmt.Sprintf(gadget, `{labels: {a: 1}}`), "",
			at + `template.spec.labels.a: Gadget .spec.labels.a is a string, but the template gives the number 1; quote it: "1"`},
		{"crd embedded resource's metadata", fmt.Sprintf(gadget, `{embedded: {apiVersion: v1, kind: ConfigMap, metadata: {nmae: x}, data: {}}}`), "",
			at + `template.spec.embedded.metadata.nmae: unknown field (did you mean 'name'?): Gadget .spec.embedded.metadata declares no field "nmae", and the API server refuses undeclared fields`},
		{"crd shaped embedded resource", fmt.Sprintf(gadget, `{shaped: {apiVersion: v1, kind: X, spec: {count: 1}}}`), "",
			at + `template.spec.shaped.spec.count: unknown field: Gadget .spec.shaped.spec declares no field "count", and the API server refuses undeclared fields; it declares 'x'`},
		{"crd status field", `template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}`, "  status: {fields: {phse: Ready}}",
			`rules.yaml:8: rule "r": status.fields.phse: unknown field (did you mean 'phase'?): gadgets .status declares no field "phse", and the API server refuses undeclared fields`},
		{"crd parent resource", `template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}`, "- name: s\n  parent: {apiVersion: apps/v1, resource: deploymnts}\n  children: [{id: c, template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}}]",
			`rules.yaml:9: rule "s": parent.resource: unknown resource (did you mean 'deployments'?): apps/v1 has no resource "deploymnts"`},
	}
	if len(tests) < 30 {
		t.Fatalf("%d cases; the issue asks for at least 30", len(tests))
	}
	opts := Options{Schemas: gadgetSchemas(t)}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadDocuments([]Document{{Source: "rules.yaml", Data: fieldsRule(tt.child, tt.extra)}}, opts)
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("Load() = %v, want the error\n%s", err, tt.want)
			}
			var got []string
			for _, e := range list {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff([]string{tt.want}, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
