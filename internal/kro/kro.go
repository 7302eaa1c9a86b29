// Package kro converts a kro ResourceGraphDefinition into a kubecel rules file (kubecel
// import kro): its SimpleSchema becomes the rule's api block, each resource with a
// template a child (includeWhen as when, readyWhen as readyWhen, one forEach iterator as
// forEach), each externalRef a ref, and the schema's status fields the rule's status.
// kro's CEL is rewritten for kubecel's variables: schema is parent, a resource is
// children.ID (self in its own readyWhen), an external reference refs.ID, an iterator
// each.
//
// What it cannot convert it leaves out and says so in Result.Notes, in plain words; the
// rules it returns are checked by loading them (rules.Load).
//
// State: none.
package kro

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/rules"
)

// Result is a converted ResourceGraphDefinition.
type Result struct {
	// Rules is the rules file: one rule, named after the definition.
	Rules []byte
	// Notes says what was not converted, or what to look at.
	Notes []string
	// Load is the error of loading Rules, nil when it loads.
	Load error
}

// The rules file, in the order a person writes it.
type (
	ruleSet struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Rules      []rule `yaml:"rules"`
	}
	rule struct {
		Name     string   `yaml:"name"`
		API      apiBlock `yaml:"api"`
		Refs     []ref    `yaml:"refs,omitempty"`
		Children []child  `yaml:"children,omitempty"`
		Status   *status  `yaml:"status,omitempty"`
	}
	apiBlock struct {
		Group          string            `yaml:"group"`
		Version        string            `yaml:"version"`
		Kind           string            `yaml:"kind"`
		Scope          string            `yaml:"scope,omitempty"`
		Types          any               `yaml:"types,omitempty"`
		Spec           any               `yaml:"spec"`
		Status         map[string]string `yaml:"status,omitempty"`
		Validation     any               `yaml:"validation,omitempty"`
		PrinterColumns any               `yaml:"printerColumns,omitempty"`
	}
	ref struct {
		ID             string `yaml:"id"`
		APIVersion     string `yaml:"apiVersion"`
		Kind           string `yaml:"kind"`
		Name           string `yaml:"name"`
		Namespace      string `yaml:"namespace,omitempty"`
		CrossNamespace bool   `yaml:"crossNamespace,omitempty"`
	}
	child struct {
		ID        string `yaml:"id"`
		When      string `yaml:"when,omitempty"`
		ForEach   string `yaml:"forEach,omitempty"`
		Template  any    `yaml:"template"`
		ReadyWhen string `yaml:"readyWhen,omitempty"`
	}
	status struct {
		Fields map[string]string `yaml:"fields"`
	}
)

// resourceKeys are the fields of a kro resource that convert.
var resourceKeys = []string{"id", "template", "includeWhen", "readyWhen", "forEach", "externalRef"}

// Convert converts a ResourceGraphDefinition (YAML). It fails only when data is not
// one; what it cannot convert is in the notes.
func Convert(data []byte) (*Result, error) {
	var rgd map[string]any
	if err := sigsyaml.Unmarshal(data, &rgd); err != nil {
		return nil, fmt.Errorf("read the ResourceGraphDefinition: %w", err)
	}
	if kind, _ := rgd["kind"].(string); kind != "ResourceGraphDefinition" {
		return nil, fmt.Errorf("kind is %q, want ResourceGraphDefinition (apiVersion kro.run/v1alpha1)", kind)
	}
	name, _ := dig(rgd, "metadata", "name").(string)
	spec, _ := rgd["spec"].(map[string]any)
	sch, _ := spec["schema"].(map[string]any)
	if name == "" || sch == nil {
		return nil, errors.New("the ResourceGraphDefinition needs metadata.name and spec.schema")
	}
	c := &converter{}
	r := rule{Name: ruleName(name)}
	if r.Name != name {
		c.note("the rule is named %q: rule names are DNS labels, and the definition is %q", r.Name, name)
	}
	r.API = c.api(sch)
	resources, _ := spec["resources"].([]any)
	c.index(resources)
	for i, v := range resources {
		res, ok := v.(map[string]any)
		if !ok {
			c.note("resources[%d] is not a map: left out", i)
			continue
		}
		c.resource(&r, res)
	}
	r.Status = c.status(sch, &r.API)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(ruleSet{APIVersion: "kubecel.dev/v1alpha1", Kind: "RuleSet", Rules: []rule{r}}); err != nil {
		return nil, err
	}
	out := buf.Bytes()
	header := fmt.Sprintf("# Converted from kro ResourceGraphDefinition %s by kubecel import kro.\n", name)
	for _, n := range c.notes {
		header += "# note: " + strings.ReplaceAll(n, "\n", "\n#   ") + "\n"
	}
	res := &Result{Rules: append([]byte(header), out...), Notes: c.notes}
	_, res.Load = rules.Load(res.Rules, rules.Options{})
	return res, nil
}

// converter holds what one conversion learned: the names kro's CEL reads, and notes.
type converter struct {
	names names
	// kinds are the apiVersion and kind of each resource with a literal template.
	kinds map[string]schema.GroupVersionKind
	spec  map[string]any
	notes []string
}

func (c *converter) note(format string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

var notLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// ruleName is a DNS label made of a definition's name.
func ruleName(name string) string {
	s := strings.Trim(notLabel.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(s) > 63 {
		s = strings.Trim(s[:63], "-")
	}
	return s
}

// api converts spec.schema.
func (c *converter) api(sch map[string]any) apiBlock {
	a := apiBlock{Kind: str(sch["kind"]), Version: str(sch["apiVersion"]), Group: str(sch["group"])}
	if a.Group == "" {
		a.Group = "kro.run" // kro's default group
	}
	if s := str(sch["scope"]); s != "" {
		a.Scope = s
	}
	a.Types = sch["types"]
	a.Spec = sch["spec"]
	c.spec, _ = sch["spec"].(map[string]any)
	if a.Spec == nil {
		a.Spec = map[string]any{}
	}
	a.Validation = sch["validation"]
	a.PrinterColumns = sch["additionalPrinterColumns"]
	for _, k := range slices.Sorted(maps.Keys(sch)) {
		if !slices.Contains([]string{"kind", "apiVersion", "group", "scope", "types", "spec", "status", "validation", "additionalPrinterColumns"}, k) {
			c.note("spec.schema.%s is not converted", k)
		}
	}
	return a
}

// index learns the ids of the resources: templates are children, externalRefs refs.
func (c *converter) index(resources []any) {
	c.names = names{"schema": "parent"}
	c.kinds = map[string]schema.GroupVersionKind{}
	for _, v := range resources {
		res, _ := v.(map[string]any)
		id := str(res["id"])
		if id == "" {
			continue
		}
		if ext, ok := res["externalRef"].(map[string]any); ok {
			c.names[id] = "refs." + id
			c.learnKind(id, ext)
			continue
		}
		c.names[id] = "children." + id
		if t, ok := res["template"].(map[string]any); ok {
			c.learnKind(id, t)
		}
	}
}

// learnKind records the kind of a resource whose manifest names a literal one.
func (c *converter) learnKind(id string, t map[string]any) {
	gv, err := schema.ParseGroupVersion(str(t["apiVersion"]))
	if err == nil && str(t["kind"]) != "" {
		c.kinds[id] = gv.WithKind(str(t["kind"]))
	}
}

// resource converts one resource into a child or a ref of r.
func (c *converter) resource(r *rule, res map[string]any) {
	id := str(res["id"])
	if id == "" {
		c.note("a resource without id is left out")
		return
	}
	for _, k := range slices.Sorted(maps.Keys(res)) {
		if !slices.Contains(resourceKeys, k) {
			c.note("resource %q: %s is not converted", id, k)
		}
	}
	if ext, ok := res["externalRef"].(map[string]any); ok {
		r.Refs = append(r.Refs, c.ref(id, ext))
		return
	}
	tmpl, ok := res["template"].(map[string]any)
	if !ok {
		c.note("resource %q has neither template nor externalRef: left out", id)
		return
	}
	ch := child{ID: id}
	names := c.names
	if fe, ok := res["forEach"].([]any); ok && len(fe) > 0 {
		iter, _ := fe[0].(map[string]any)
		if len(fe) > 1 || len(iter) != 1 {
			c.note("resource %q: forEach with more than one iterator (kro takes their cartesian product) is not converted: the child is made once; write its forEach by hand", id)
		} else {
			for k, v := range iter {
				ch.ForEach = c.names.bare(str(v))
				names = c.names.with(map[string]string{k: "each"})
			}
		}
	}
	ch.When = c.conditions(names, res["includeWhen"])
	ch.ReadyWhen = c.conditions(names.with(map[string]string{id: "self"}), res["readyWhen"])
	ch.Template = names.values(tmpl)
	r.Children = append(r.Children, ch)
}

// conditions joins a list of kro conditions into one CEL expression.
func (c *converter) conditions(n names, v any) string {
	list, _ := v.([]any)
	var parts []string
	for _, item := range list {
		if s := str(item); s != "" {
			parts = append(parts, n.bare(s))
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	for i, p := range parts {
		parts[i] = "(" + p + ")"
	}
	return strings.Join(parts, " && ")
}

// ref converts an externalRef.
func (c *converter) ref(id string, ext map[string]any) ref {
	out := ref{ID: id, APIVersion: str(ext["apiVersion"]), Kind: str(ext["kind"])}
	md, _ := ext["metadata"].(map[string]any)
	out.Name = c.names.template(str(md["name"]))
	if ns := str(md["namespace"]); ns != "" {
		out.Namespace = c.names.template(ns)
		out.CrossNamespace = true
		c.note("ref %q names namespace %s: kubecel reads a ref outside the parent's namespace only with crossNamespace: true, set here; remove both if it is always the parent's", id, ns)
	}
	return out
}

// status converts the schema's status fields: each ${} becomes a status field, typed in
// the api block.
func (c *converter) status(sch map[string]any, a *apiBlock) *status {
	fields, _ := sch["status"].(map[string]any)
	if len(fields) == 0 {
		return nil
	}
	out := &status{Fields: map[string]string{}}
	a.Status = map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		s, ok := fields[name].(string)
		if !ok {
			c.note("status.%s is a nested object: not converted; write it as top-level fields", name)
			continue
		}
		out.Fields[name] = c.names.template(s)
		a.Status[name] = c.statusType(name, s)
	}
	if len(out.Fields) == 0 {
		return nil
	}
	return out
}

var simplePath = regexp.MustCompile(`^\$\{\s*([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)\s*\}$`)

// statusType is the type of a status field in the api block: kro infers it from the
// expression; here it is read from the schema of what a plain path reads (a built-in
// kind's field, or a spec field), and is string otherwise, with a note.
func (c *converter) statusType(name, expr string) string {
	if m := simplePath.FindStringSubmatch(strings.TrimSpace(expr)); m != nil {
		path := strings.Split(strings.TrimPrefix(m[2], "."), ".")
		if m[1] == "schema" && len(path) == 2 && path[0] == "spec" {
			if t, ok := c.spec[path[1]].(string); ok {
				if typ := strings.TrimSpace(strings.SplitN(t, "|", 2)[0]); slices.Contains([]string{"string", "integer", "number", "boolean"}, typ) {
					return typ
				}
			}
		}
		if gvk, ok := c.kinds[m[1]]; ok {
			if typ := builtinType(gvk, path); typ != "" {
				return typ
			}
		}
	}
	c.note("status.%s: declared as string; kro infers its type from %s, so check it", name, expr)
	return "string"
}

// builtinType is the SimpleSchema type of a field of a built-in kind, "" when unknown.
func builtinType(gvk schema.GroupVersionKind, path []string) string {
	s := rules.BuiltinSchemas().KindSchema(gvk)
	for _, p := range path {
		if s == nil {
			return ""
		}
		next, ok := s.Properties[p]
		switch {
		case ok:
			s = &next
		case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil: // a map's value
			s = s.AdditionalProperties.Schema
		default:
			return ""
		}
	}
	if s == nil {
		return ""
	}
	switch s.Type {
	case "string", "integer", "number", "boolean":
		return s.Type
	case "array":
		if s.Items != nil && s.Items.Schema != nil && s.Items.Schema.Type == "object" {
			return "[]object"
		}
		if s.Items != nil && s.Items.Schema != nil && s.Items.Schema.Type != "" {
			return "[]" + s.Items.Schema.Type
		}
	case "object":
		return "object"
	}
	return ""
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func dig(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}
