package rules

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// This file measures what a loaded rule keeps alive: the heap a rule set of many rules
// holds once loaded, per rule. The rules are those of the bench command's --crds phase
// (one CRD per rule, each rule making a ConfigMap and a Service and writing one status
// field), whose controller's memory per rule is what issue 39 is about.

// thingCRD is CRD Thing<i> of group bench.kubecel.dev: a namespaced resource with a
// status subresource, a required spec.value and a status that keeps unknown fields, as
// the bench command makes it. With own set, its spec also has a field named after it
// (thing<i>), so that no two CRDs have the same schema.
func thingCRD(i int, own bool) *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	kind := fmt.Sprintf("Thing%d", i)
	plural := fmt.Sprintf("thing%ds", i)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = plural + ".bench.kubecel.dev"
	crd.Spec = apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "bench.kubecel.dev",
		Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
		Scope: apiextensionsv1.NamespaceScoped,
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
			Name: "v1", Served: true, Storage: true,
			Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"spec": {Type: "object", Required: []string{"value"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"value": {Type: "string"},
					}},
					"status": {Type: "object", XPreserveUnknownFields: &preserve},
				},
			}},
		}},
	}
	if own {
		spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		spec.Properties[fmt.Sprintf("thing%d", i)] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	}
	return crd
}

// thingRule is the rule of CRD Thing<i>.
const thingRule = `  - name: thing%[1]d
    parent:
      apiVersion: bench.kubecel.dev/v1
      resource: thing%[1]ds
      namespaces: [bench]
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-config"}
          data:
            value: ${parent.spec.value}
      - id: service
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
`

// thingRules returns the rules file of n Thing rules and the schemas of their CRDs
// (each its own schema with own set).
func thingRules(n int, own bool) ([]byte, *CRDSchemas) {
	var b strings.Builder
	b.WriteString("apiVersion: kubecel.dev/v1alpha1\nkind: RuleSet\nrules:\n")
	crds := make([]*apiextensionsv1.CustomResourceDefinition, n)
	for i := range n {
		fmt.Fprintf(&b, thingRule, i)
		crds[i] = thingCRD(i, own)
	}
	return []byte(b.String()), SchemasFromCRDs(crds...)
}

// heapAfterGC returns the live heap after two collections (the second frees what the
// first's finalizers released).
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// retainedSet keeps BenchmarkRetainedPerRule's rule set alive until the test binary
// writes its heap profile (-memprofile), so that the profile's inuse_space shows what
// the rules hold.
var retainedSet *RuleSet

// BenchmarkRetainedPerRule loads 500 Thing rules with their CRDs' schemas and reports
// the live heap the loaded rule set holds, per rule (retained-B/rule): the memory a
// controller pays per rule for the compiled rules alone. The source bytes and the
// schemas are made before the first measure; what the first load of the process builds
// once (the CEL library, the embedded schemas) is built by a load before it.
//
// In samecrd, every CRD has the schema the bench command gives them all, as in its
// --crds phase; in owncrd each has a schema of its own, so that nothing built from a
// parent's schema is shared.
//
//	go test -run '^$' -bench BenchmarkRetainedPerRule -benchtime 1x ./rules
//
// With -memprofile, `go tool pprof -sample_index=inuse_space` shows what they hold.
func BenchmarkRetainedPerRule(b *testing.B) {
	for _, own := range []bool{false, true} {
		name := "samecrd"
		if own {
			name = "owncrd"
		}
		b.Run(name, func(b *testing.B) { retainedPerRule(b, own) })
	}
}

// retainedPerRule is BenchmarkRetainedPerRule with CRDs of their own schemas or not.
func retainedPerRule(b *testing.B, own bool) {
	const n = 500
	warm, warmSchemas := thingRules(1, own)
	if _, err := Load(warm, Options{Schemas: warmSchemas}); err != nil {
		b.Fatal(err)
	}
	data, schemas := thingRules(n, own)
	var perRule float64
	for b.Loop() {
		before := heapAfterGC()
		set, err := Load(data, Options{Schemas: schemas})
		if err != nil {
			b.Fatal(err)
		}
		after := heapAfterGC()
		if len(set.Rules) != n {
			b.Fatalf("loaded %d rules, want %d", len(set.Rules), n)
		}
		perRule = (float64(after) - float64(before)) / n
		retainedSet = set
	}
	b.ReportMetric(perRule, "retained-B/rule")
}

// BenchmarkLoadThings loads 200 Thing rules with their CRDs' schemas: what sharing
// (share.go) costs or saves at load, the other side of BenchmarkRetainedPerRule.
func BenchmarkLoadThings(b *testing.B) {
	for _, own := range []bool{false, true} {
		name := "samecrd"
		if own {
			name = "owncrd"
		}
		b.Run(name, func(b *testing.B) {
			data, schemas := thingRules(200, own)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Load(data, Options{Schemas: schemas}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
