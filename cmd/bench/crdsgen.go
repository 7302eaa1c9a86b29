package main

import (
	"bytes"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// What the --crds phase installs and runs (crds.go): K CRDs Thing0 ... ThingK-1 with a
// rule each and one parent each, the measure; a CRD RolloutThing whose rule has
// a rollout policy and 20 parents, so that an edit of it takes steps; and a rule for a
// CRD LateThing that does not exist when the controller starts (the rule waits), created
// during the phase. Every rule is the same apart from its parent resource: per parent a
// ConfigMap and a Service, and one status field. An edit adds a data key "edit" to the
// ConfigMap and a status field "edit".

const (
	// crdsGroup is the group of every CRD of the phase.
	crdsGroup = "bench.kubecel.dev"
	// rolloutRule and lateRule name the two rules besides the K measured ones.
	rolloutRule = "rollout"
	lateRule    = "late"
	// rolloutParents is how many parents the rollout rule has.
	rolloutParents = 20
	// crdValue is every parent's spec.value.
	crdValue = "v1"
)

// crdRolloutPolicy is the rollout rule's policy: three steps of 2, 10 and 20 parents,
// 2 s apart.
const crdRolloutPolicy = `    rollout: {steps: ["10%", "50%", "100%"], pause: 2s, progressDeadline: 5m}` + "\n"

// crdRolloutSteps are crdRolloutPolicy's steps, for the times at which each was reached.
var crdRolloutSteps = []float64{10, 50, 100}

// crdKind is one CRD of the phase, its rule and its parents.
type crdKind struct {
	rule, kind, plural string
	parents            int
	// policy gives the rule crdRolloutPolicy.
	policy bool
}

// crdKinds are the phase's CRDs: the K measured ones, then the rollout rule's and the
// late one's.
func crdKinds(k int) []crdKind {
	out := make([]crdKind, 0, k+2)
	for i := range k {
		out = append(out, crdKind{rule: fmt.Sprintf("thing%d", i), kind: fmt.Sprintf("Thing%d", i), plural: fmt.Sprintf("thing%ds", i), parents: 1})
	}
	return append(out,
		crdKind{rule: rolloutRule, kind: "RolloutThing", plural: "rolloutthings", parents: rolloutParents, policy: true},
		crdKind{rule: lateRule, kind: "LateThing", plural: "latethings", parents: 1})
}

func (c crdKind) gvr() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: crdsGroup, Version: "v1", Resource: c.plural}
}

// parentName is the name of the rule's parent j. Names are unique across the kinds, as
// the children of all of them share the namespace; ruleOf reads the rule back.
func (c crdKind) parentName(j int) string {
	if c.parents == 1 {
		return c.rule + "-p0"
	}
	return fmt.Sprintf("%s-p%02d", c.rule, j)
}

// ruleOf is the rule of a parent or child of the phase, by its name ("thing7-p0",
// "thing7-p0-config" -> "thing7"); "" for another name.
func ruleOf(name string) string {
	name = strings.TrimSuffix(name, "-config")
	i := strings.LastIndex(name, "-p")
	if i <= 0 {
		return ""
	}
	return name[:i]
}

// crd is the kind's CRD: a namespaced resource with a status subresource, spec.value,
// an optional spec field named after the kind, and a status that keeps whatever the rule
// writes.
func (c crdKind) crd() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: c.plural + "." + crdsGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: crdsGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: c.kind, ListKind: c.kind + "List", Plural: c.plural, Singular: strings.ToLower(c.kind)},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Required: []string{"value"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"value": {Type: "string"},
							// A field of its own, so that no two CRDs have one schema, as
							// on a real platform: kubecel shares what rules of one schema
							// can share, which would flatter the figures.
							strings.ToLower(c.kind) + "Setting": {Type: "string"},
						}},
						"status": {Type: "object", XPreserveUnknownFields: &preserve},
					},
				}},
			}},
		},
	}
}

// parent is the kind's parent j in namespace ns.
func (c crdKind) parent(ns string, j int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": crdsGroup + "/v1", "kind": c.kind,
		"metadata": map[string]any{"name": c.parentName(j), "namespace": ns},
		"spec":     map[string]any{"value": crdValue},
	}}
}

// crdRuleText is one rule; %[1]s is its name, %[2]s its resource, %[3]s the ConfigMap's
// extra data line, %[4]s the status's extra field line, %[5]s its rollout policy line.
const crdRuleText = `  - name: %[1]s
    parent:
      apiVersion: bench.kubecel.dev/v1
      resource: %[2]s
      namespaces: [bench]
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-config"}
          data:
            value: ${parent.spec.value}
%[3]s      - id: service
        template:
          apiVersion: v1
          kind: Service
          metadata: {name: "${parent.metadata.name}"}
          spec:
            selector: {app: "${parent.metadata.name}"}
            ports: [{name: http, port: 80, targetPort: 8080}]
    status:
      fields:
        value: ${parent.spec.value}
%[4]s%[5]s`

// crdRules is the rules file of the kinds, with edits[rule] as the edit value of the
// rules it names.
func crdRules(kinds []crdKind, edits map[string]string) []byte {
	var b bytes.Buffer
	b.WriteString("# The rules of cmd/bench --crds: one rule per CRD (crdsgen.go).\napiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n")
	for _, c := range kinds {
		data, field, policy := "", "", ""
		if v, ok := edits[c.rule]; ok {
			data, field = fmt.Sprintf("            edit: %q\n", v), fmt.Sprintf("        edit: %q\n", v)
		}
		if c.policy {
			policy = crdRolloutPolicy
		}
		fmt.Fprintf(&b, crdRuleText, c.rule, c.plural, data, field, policy)
	}
	return b.Bytes()
}
