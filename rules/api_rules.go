package rules

import (
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules/apischema"
)

// This file is what a rule's `api:` block does to the rest of the rules: the rule's
// parent is the resource the block defines, and the schema generated from the block is
// that resource's schema for every rule of the set (as a CRD given to Options.Schemas
// would be), and for render and test (RuleSet.Admit). The block itself is read by
// package apischema.

// withAPIs checks the APIs the rules define (each defined once; the status fields the
// rules write on them declared) and returns opts whose schemas, scopes and served kinds
// include them. Without any, opts is returned as it is.
func withAPIs(sources []*ruleSource, opts Options, errs *ErrorList) Options {
	var crds []*apiextensionsv1.CustomResourceDefinition
	defs := map[schema.GroupVersionResource]*apischema.Definition{}
	byName := map[string]*ruleSource{}
	byKind := map[schema.GroupKind]*ruleSource{}
	for _, src := range sources {
		def := src.api.definition()
		if def == nil {
			continue
		}
		w := where{Rule: src.Name, Field: "api", Path: src.At.Key("api")}
		if other := byName[def.Name()]; other != nil {
			fail(errs, w.Key("kind"), fmt.Sprintf("rule %q defines %s already; an API is defined by one rule", other.Name, def.Name()))
			continue
		}
		if other := byKind[def.GVK().GroupKind()]; other != nil {
			fail(errs, w.Key("kind"), fmt.Sprintf("rule %q defines kind %s in group %s already; an API is defined by one rule", other.Name, def.Kind, def.Group))
			continue
		}
		byName[def.Name()], byKind[def.GVK().GroupKind()] = src, src
		defs[def.GVR()] = def
		crds = append(crds, def.CRD(apischema.Conditions{}))
	}
	if len(defs) == 0 {
		return opts
	}
	for _, src := range sources {
		if def := defs[parentGVR(src)]; def != nil && src.Status != nil {
			checkDeclaredStatus(src, def, errs)
		}
	}
	opts.Schemas = &apiSchemas{defined: SchemasFromCRDs(crds...), defs: defs, base: opts.Schemas}
	if opts.Served != nil {
		opts.Served = &apiServed{base: opts.Served, defs: defs}
	}
	return opts
}

// parentGVR is the parent resource a rule source names, as far as it reads.
func parentGVR(src *ruleSource) schema.GroupVersionResource {
	gv, err := schema.ParseGroupVersion(src.Parent.APIVersion)
	if err != nil {
		return schema.GroupVersionResource{}
	}
	return gv.WithResource(src.Parent.Resource)
}

// definesAPI reports whether the rule set being loaded defines the resource gvr (api:).
func definesAPI(opts Options, gvr schema.GroupVersionResource) bool {
	as, ok := opts.Schemas.(*apiSchemas)
	return ok && as.defs[gvr] != nil
}

// checkDeclaredStatus reports the status fields a rule writes on a defined API that the
// API does not declare: the API server would drop them.
func checkDeclaredStatus(src *ruleSource, def *apischema.Definition, errs *ErrorList) {
	declared := def.StatusFields()
	w := where{Rule: src.Name, Field: "status.fields", Path: src.At.Key("status").Key("fields")}
	for _, name := range sortedKeys(src.Status.Fields) {
		if slices.Contains(declared, name) || slices.Contains(reservedStatusFields, name) {
			continue
		}
		fail(errs, w.Key(name), fmt.Sprintf("%s does not declare status.%s, and the API server drops undeclared fields: add %s: TYPE (such as string) to the status of the rule that defines it", def.Name(), name, name))
	}
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// apiSchemas is a SchemaSource of the APIs the rules define, before base (Options.Schemas
// as given, maybe nil): a CRD given to check or render beside the rules does not hide
// the one the rules generate.
type apiSchemas struct {
	defined *CRDSchemas
	defs    map[schema.GroupVersionResource]*apischema.Definition
	base    SchemaSource
}

func (a *apiSchemas) ResourceSchema(gvr schema.GroupVersionResource) *apiextensionsv1.JSONSchemaProps {
	if s := a.defined.ResourceSchema(gvr); s != nil || a.base == nil {
		return s
	}
	return a.base.ResourceSchema(gvr)
}

func (a *apiSchemas) KindSchema(gvk schema.GroupVersionKind) *apiextensionsv1.JSONSchemaProps {
	if s := a.defined.KindSchema(gvk); s != nil || a.base == nil {
		return s
	}
	return a.base.KindSchema(gvk)
}

func (a *apiSchemas) Namespaced(gk schema.GroupKind) (namespaced, known bool) {
	if namespaced, known = a.defined.Namespaced(gk); known {
		return namespaced, known
	}
	if more, ok := a.base.(ScopeSource); ok {
		return more.Namespaced(gk)
	}
	return false, false
}

func (a *apiSchemas) ResourceNamespaced(gr schema.GroupResource) (namespaced, known bool) {
	if namespaced, known = a.defined.ResourceNamespaced(gr); known {
		return namespaced, known
	}
	if more, ok := a.base.(ScopeSource); ok {
		return more.ResourceNamespaced(gr)
	}
	return false, false
}

func (a *apiSchemas) hasStatusSubresource(gvr schema.GroupVersionResource) (has, known bool) {
	if has, known = a.defined.hasStatusSubresource(gvr); known {
		return has, known
	}
	if more, ok := a.base.(statusSubresources); ok {
		return more.hasStatusSubresource(gvr)
	}
	return false, false
}

// apiServed is a ServedSource in which the resources the rules define are served: the
// controller creates their CRDs before it starts the rules.
type apiServed struct {
	base ServedSource
	defs map[schema.GroupVersionResource]*apischema.Definition
}

func (a *apiServed) ResourceServed(gvr schema.GroupVersionResource) string {
	if a.defs[gvr] != nil {
		return ""
	}
	return a.base.ResourceServed(gvr)
}

func (a *apiServed) KindServed(gvk schema.GroupVersionKind) string {
	for _, def := range a.defs {
		if def.GVK() == gvk {
			return ""
		}
	}
	return a.base.KindServed(gvk)
}

var (
	_ ScopeSource        = (*apiSchemas)(nil)
	_ statusSubresources = (*apiSchemas)(nil)
)

// API is the definition of the parent resource the rule defines (its api block), or nil
// when the rule names an existing resource.
func (r *Rule) API() *apischema.Definition { return r.api }

// CRD is the CustomResourceDefinition the rule's api generates, with the rule's
// conditions as its default printer columns; nil without api.
func (r *Rule) CRD() *apiextensionsv1.CustomResourceDefinition {
	if r.api == nil {
		return nil
	}
	var c apischema.Conditions
	if r.HasStatus {
		c = apischema.Conditions{Ready: r.ReadyCondition, Synced: r.SyncedCondition}
	}
	return r.api.CRD(c)
}

// CRDs lists the CRDs the rules define, in the order of the rules.
func (rs *RuleSet) CRDs() []*apiextensionsv1.CustomResourceDefinition {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, r := range rs.Rules {
		if crd := r.CRD(); crd != nil {
			out = append(out, crd)
		}
	}
	return out
}

// definedResource returns the resource of a kind a rule of the set defines.
func (rs *RuleSet) definedResource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool) {
	for _, r := range rs.Rules {
		if r.api != nil && r.api.GVK() == gvk {
			return r.api.GVR(), true
		}
	}
	return schema.GroupVersionResource{}, false
}

// Admit does to an object of a kind the rules define what the API server would do
// before storing it (apischema.Definition.Admit): defaults applied, unknown fields
// dropped, the result validated. It returns nil, nil for a kind no rule defines.
func (rs *RuleSet) Admit(obj map[string]any) (*apischema.Admitted, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, nil
	}
	for _, r := range rs.Rules {
		if r.api != nil && r.api.GVK() == gv.WithKind(kind) {
			return r.api.Admit(obj)
		}
	}
	return nil, nil
}

// Schemas is the SchemaSource the rules were loaded with: Options.Schemas, with the
// APIs the rules define before it; nil when there is neither.
func (rs *RuleSet) Schemas() SchemaSource { return rs.opts.Schemas }
