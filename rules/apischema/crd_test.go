package apischema

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// website is the example: what docs/own-crd.md shows.
const website = `group: sites.example.com
version: v1
kind: Website
spec:
  image: string | required=true
  replicas: integer | default=1 minimum=1
  tier: string | default=web enum=web,api
status:
  url: string
`

func parse(t *testing.T, src string) *Definition {
	t.Helper()
	d, problems := Parse(block(t, src))
	if len(problems) > 0 {
		t.Fatalf("Parse: %v\n%s", problems, src)
	}
	return d
}

func TestCRD(t *testing.T) {
	d := parse(t, website)
	crd := d.CRD(Conditions{Ready: "Ready", Synced: "Synced"})
	if crd.Name != "websites.sites.example.com" || d.Name() != crd.Name {
		t.Errorf("name = %s, %s", crd.Name, d.Name())
	}
	wantNames := apiextensionsv1.CustomResourceDefinitionNames{Plural: "websites", Singular: "website", Kind: "Website", ListKind: "WebsiteList"}
	if diff := cmp.Diff(wantNames, crd.Spec.Names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if crd.Spec.Scope != apiextensionsv1.NamespaceScoped || crd.Spec.Group != "sites.example.com" {
		t.Errorf("scope %s, group %s", crd.Spec.Scope, crd.Spec.Group)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("versions: %+v", crd.Spec.Versions)
	}
	v := crd.Spec.Versions[0]
	if v.Name != "v1" || !v.Served || !v.Storage || v.Subresources == nil || v.Subresources.Status == nil {
		t.Errorf("version %+v: want v1, served, stored, with the status subresource", v)
	}
	root := v.Schema.OpenAPIV3Schema
	if got := root.Required; len(got) != 1 || got[0] != "spec" {
		t.Errorf("root required = %v, want [spec] (spec.image is required)", got)
	}
	status := root.Properties["status"]
	for _, f := range []string{"url", "observedGeneration", "conditions"} {
		if _, ok := status.Properties[f]; !ok {
			t.Errorf("status has no %s: %v", f, status.Properties)
		}
	}
	conds := status.Properties["conditions"]
	if conds.XListType == nil || *conds.XListType != "map" || len(conds.XListMapKeys) != 1 || conds.XListMapKeys[0] != "type" {
		t.Errorf("conditions are not a list keyed by type: %+v", conds)
	}
	var cols []string
	for _, c := range v.AdditionalPrinterColumns {
		cols = append(cols, c.Name+"="+c.JSONPath)
	}
	want := []string{`Ready=.status.conditions[?(@.type=="Ready")].status`, `Synced=.status.conditions[?(@.type=="Synced")].status`, "Age=.metadata.creationTimestamp"}
	if diff := cmp.Diff(want, cols); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	if got := d.StatusFields(); len(got) != 1 || got[0] != "url" {
		t.Errorf("StatusFields = %v", got)
	}
	if gvr := d.GVR(); gvr.String() != "sites.example.com/v1, Resource=websites" {
		t.Errorf("GVR = %v", gvr)
	}
}

func TestCRDOptions(t *testing.T) {
	d := parse(t, `group: infra.example.com
version: v1alpha1
kind: Policy
scope: Cluster
shortNames: [pol]
categories: [infra]
spec:
  level: integer | default=1
printerColumns:
  - {name: Level, type: integer, jsonPath: .spec.level, priority: 1}
`)
	crd := d.CRD(Conditions{})
	if crd.Spec.Scope != apiextensionsv1.ClusterScoped || crd.Spec.Names.Plural != "policies" || d.Namespaced {
		t.Errorf("scope %s, plural %s", crd.Spec.Scope, crd.Spec.Names.Plural)
	}
	if diff := cmp.Diff([]string{"pol"}, crd.Spec.Names.ShortNames); diff != "" {
		t.Error(diff)
	}
	cols := crd.Spec.Versions[0].AdditionalPrinterColumns
	if len(cols) != 1 || cols[0].Name != "Level" || cols[0].Priority != 1 {
		t.Errorf("columns = %+v, want only the block's", cols)
	}
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	spec := root.Properties["spec"]
	if len(root.Required) != 0 || spec.Default == nil || string(spec.Default.Raw) != "{}" {
		t.Errorf("spec without required fields: want an empty default and spec optional, got required %v default %v", root.Required, spec.Default)
	}
	// Without a status block, no condition columns.
	if d := parse(t, website); len(d.CRD(Conditions{}).Spec.Versions[0].AdditionalPrinterColumns) != 1 {
		t.Error("columns without conditions: want Age only")
	}
	if d := parse(t, website+"plural: sites\n"); d.CRD(Conditions{}).Name != "sites.sites.example.com" {
		t.Error("plural not used")
	}
	if got := string(parse(t, website).Schema().Properties["spec"].Properties["tier"].Enum[1].Raw); got != `"api"` {
		t.Error("Schema lost the enum")
	}
}
