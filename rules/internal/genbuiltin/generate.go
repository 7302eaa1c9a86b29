package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/rules/internal/builtin"
)

// groupVersions are the API group-versions whose kinds are embedded: the workloads,
// networking, policy, RBAC, autoscaling and storage kinds that rules commonly create or
// watch. "v1" is the core group.
var groupVersions = []string{
	"v1",
	"apps/v1",
	"batch/v1",
	"networking.k8s.io/v1",
	"policy/v1",
	"rbac.authorization.k8s.io/v1",
	"autoscaling/v2",
	"storage.k8s.io/v1",
}

// refPrefix starts every $ref of the documents.
const refPrefix = "#/components/schemas/"

// Generate reads the API server at cfg and returns the encoded builtin.File.
func Generate(ctx context.Context, cfg *rest.Config) ([]byte, error) {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	g := &getter{ctx: ctx, client: client, host: strings.TrimSuffix(cfg.Host, "/")}
	var version struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := g.get("/version", &version); err != nil {
		return nil, err
	}
	f := &builtin.File{KubernetesVersion: version.GitVersion, Definitions: map[string]apiextensionsv1.JSONSchemaProps{}}
	for _, gv := range groupVersions {
		kinds, defs, err := g.groupVersion(gv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", gv, err)
		}
		f.Kinds = append(f.Kinds, kinds...)
		for name, d := range defs {
			f.Definitions[name] = d
		}
	}
	slices.SortFunc(f.Kinds, func(a, b builtin.Kind) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Version, b.Version), cmp.Compare(a.Kind, b.Kind))
	})
	return builtin.Encode(f)
}

type getter struct {
	ctx    context.Context
	client *http.Client
	host   string
}

// get decodes the JSON document at path into v.
func (g *getter) get(path string, v any) error {
	req, err := http.NewRequestWithContext(g.ctx, http.MethodGet, g.host+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := g.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// groupVersion returns the kinds of one group-version's resources and the definitions
// their schemas reach.
func (g *getter) groupVersion(gv string) ([]builtin.Kind, map[string]apiextensionsv1.JSONSchemaProps, error) {
	prefix := "/apis/"
	if gv == "v1" {
		prefix = "/api/"
	}
	var resources metav1.APIResourceList
	if err := g.get(prefix+gv, &resources); err != nil {
		return nil, nil, err
	}
	var doc struct {
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := g.get("/openapi/v3"+prefix+gv, &doc); err != nil {
		return nil, nil, err
	}
	group, version, found := strings.Cut(gv, "/")
	if !found {
		group, version = "", gv
	}
	byKind := kindSchemas(doc.Components.Schemas, group, version)
	var kinds []builtin.Kind
	defs := map[string]apiextensionsv1.JSONSchemaProps{}
	for _, r := range resources.APIResources {
		if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
			continue
		}
		name, ok := byKind[r.Kind]
		if !ok {
			return nil, nil, fmt.Errorf("resource %s: no schema for kind %s", r.Name, r.Kind)
		}
		kinds = append(kinds, builtin.Kind{Group: group, Version: version, Kind: r.Kind,
			Resource: r.Name, Namespaced: r.Namespaced, Schema: name})
		if err := addDefinition(doc.Components.Schemas, name, defs); err != nil {
			return nil, nil, err
		}
	}
	return kinds, defs, nil
}

// kindSchemas maps the kinds of group/version to the names of their schemas, from each
// schema's x-kubernetes-group-version-kind.
func kindSchemas(schemas map[string]map[string]any, group, version string) map[string]string {
	out := map[string]string{}
	for name, s := range schemas {
		gvks, _ := s["x-kubernetes-group-version-kind"].([]any)
		for _, x := range gvks {
			gvk, _ := x.(map[string]any)
			if gvk["group"] == group && gvk["version"] == version {
				if kind, ok := gvk["kind"].(string); ok {
					out[kind] = name
				}
			}
		}
	}
	return out
}

// addDefinition converts the named schema and, recursively, those it refers to.
func addDefinition(schemas map[string]map[string]any, name string, defs map[string]apiextensionsv1.JSONSchemaProps) error {
	if _, done := defs[name]; done {
		return nil
	}
	raw, ok := schemas[name]
	if !ok {
		return fmt.Errorf("no schema %s", name)
	}
	refs := map[string]bool{}
	defs[name] = convert(raw, refs)
	for ref := range refs {
		if err := addDefinition(schemas, ref, defs); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// convert keeps what type checking reads of one OpenAPI v3 schema, adding the names of
// the definitions it refers to to refs.
func convert(s map[string]any, refs map[string]bool) apiextensionsv1.JSONSchemaProps {
	if ref := refOf(s); ref != "" {
		refs[ref] = true
		return apiextensionsv1.JSONSchemaProps{Ref: &ref}
	}
	var out apiextensionsv1.JSONSchemaProps
	out.Type, _ = s["type"].(string)
	if s["format"] == "int-or-string" || oneOfTypes(s) == "integer,string" {
		out.XIntOrString = true
		out.Type = ""
	}
	if props, ok := s["properties"].(map[string]any); ok {
		out.Properties = make(map[string]apiextensionsv1.JSONSchemaProps, len(props))
		for name, p := range props {
			if m, ok := p.(map[string]any); ok {
				out.Properties[name] = convert(m, refs)
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		item := convert(items, refs)
		out.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &item}
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		value := convert(ap, refs)
		out.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &value}
	}
	if keep, ok := s["x-kubernetes-preserve-unknown-fields"].(bool); ok && keep {
		out.XPreserveUnknownFields = &keep
	}
	if embedded, ok := s["x-kubernetes-embedded-resource"].(bool); ok {
		out.XEmbeddedResource = embedded
	}
	return out
}

// refOf returns the definition a schema stands for: its $ref, or the only $ref of its
// allOf (how the documents attach a default or description to a reference).
func refOf(s map[string]any) string {
	if ref, ok := s["$ref"].(string); ok {
		return strings.TrimPrefix(ref, refPrefix)
	}
	all, _ := s["allOf"].([]any)
	if len(all) != 1 {
		return ""
	}
	only, _ := all[0].(map[string]any)
	if ref, ok := only["$ref"].(string); ok {
		return strings.TrimPrefix(ref, refPrefix)
	}
	return ""
}

// oneOfTypes lists the sorted types of a oneOf, comma-separated: "integer,string" for an
// IntOrString, "number,string" for a Quantity (which stays untyped).
func oneOfTypes(s map[string]any) string {
	var types []string
	one, _ := s["oneOf"].([]any)
	for _, x := range one {
		m, _ := x.(map[string]any)
		if t, ok := m["type"].(string); ok {
			types = append(types, t)
		}
	}
	slices.Sort(types)
	return strings.Join(types, ",")
}
