package rules

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules/internal/kindschema"
)

// This file is what Load checks about the resources and kinds a rule names, beyond their
// spelling: whether a cluster serves them (Options.Served), whether a parent's resource
// is the plural name of a kind it knows, and whether a parent with a status block has a
// status subresource.

// ServedSource says whether a cluster serves a resource or a kind. `kubecel check`
// against a cluster gives one built from the cluster's discovery, so that a rule whose
// kinds are not served is an error there. The controller and plan give none: their rules
// wait for such kinds (a CRD installed later) while the other rules run.
type ServedSource interface {
	// ResourceServed returns "" when the cluster serves gvr, else a message saying that
	// it does not and, where it can tell, what was meant.
	ResourceServed(gvr schema.GroupVersionResource) string
	// KindServed is ResourceServed for a kind.
	KindServed(gvk schema.GroupVersionKind) string
}

// statusSubresources is implemented by a SchemaSource that knows which resources have a
// status subresource (CRDSchemas does). known is false when it does not know gvr.
type statusSubresources interface {
	hasStatusSubresource(gvr schema.GroupVersionResource) (has, known bool)
}

// checkServed reports the parent, children and refs of a compiled rule whose kinds the
// cluster of opts.Served does not serve.
func checkServed(src *ruleSource, r *Rule, children []*Child, served ServedSource, errs *ErrorList) {
	if served == nil {
		return
	}
	if !r.Parent.GVR.Empty() {
		if msg := served.ResourceServed(r.Parent.GVR); msg != "" {
			fail(errs, where{Rule: src.Name, Field: "parent.resource", Path: src.At.Key("parent").Key("resource")}, msg)
		}
	}
	for _, ch := range children {
		if ch.GVK.Empty() {
			continue
		}
		msg := served.KindServed(ch.GVK)
		if msg == "" {
			continue
		}
		w := where{Rule: src.Name, Child: ch.ID, Field: "kind"}
		for _, cs := range src.Children {
			if cs.ID == ch.ID {
				w.Path = cs.At.Key("expr")
				if cs.Template != nil {
					w.Field, w.Path = "template.kind", cs.At.Key("template").Key("kind")
				}
			}
		}
		fail(errs, w, msg)
	}
	for _, ref := range r.Refs {
		msg := served.KindServed(ref.GVK)
		if msg == "" {
			continue
		}
		w := where{Rule: src.Name, Ref: ref.ID, Field: "kind"}
		for _, rs := range src.Refs {
			if rs.ID == ref.ID {
				w.Path = rs.At.Key("kind")
			}
		}
		fail(errs, w, msg)
	}
}

// checkResourceName reports a parent resource that is not a known plural resource name
// but is the singular name or the kind of one (resource: greeting for greetings), when
// the CRDs of opts.Schemas or the built-in kinds define it.
func checkResourceName(src *ruleSource, gvr schema.GroupVersionResource, opts Options, errs *ErrorList) {
	if gvr.Resource == "" || opts.schemas().ResourceSchema(gvr) != nil {
		return
	}
	if _, known := newScopes(opts).resource(gvr.GroupResource()); known {
		return
	}
	meant := ""
	for _, k := range builtinKinds {
		if k.group == gvr.Group && (strings.EqualFold(k.kind, gvr.Resource)) {
			meant = k.resource
		}
	}
	if crds, ok := opts.Schemas.(*CRDSchemas); ok && meant == "" {
		meant = crds.pluralOf(gvr.GroupResource())
	}
	if meant == "" {
		return
	}
	fail(errs, where{Rule: src.Name, Field: "parent.resource", Path: src.At.Key("parent").Key("resource")},
		fmt.Sprintf("%q is the singular name, not the resource: write the plural resource name %q", gvr.Resource, meant))
}

// checkStatusSubresource reports a status block on a parent whose CRD has no status
// subresource, or whose status schema does not declare what the controller writes in
// every status: the API server would refuse the controller's status writes.
func checkStatusSubresource(src *ruleSource, gvr schema.GroupVersionResource, opts Options, errs *ErrorList) {
	ss, ok := opts.Schemas.(statusSubresources)
	if src.Status == nil || !ok || gvr.Empty() {
		return
	}
	has, known := ss.hasStatusSubresource(gvr)
	if !known {
		return
	}
	w := where{Rule: src.Name, Field: "status", Path: src.At.Key("status")}
	if !has {
		fail(errs, w, fmt.Sprintf("the CRD of %s has no status subresource in version %s, and the controller writes status there: add subresources: {status: {}} to that version of the CRD, or remove status from the rule",
			gvr.GroupResource(), gvr.Version))
		return
	}
	if missing := undeclaredStatus(opts.schemas().ResourceSchema(gvr)); len(missing) > 0 {
		fail(errs, w, fmt.Sprintf("the CRD of %s (version %s) does not declare status.%s, which the controller writes with the rule's fields, and the API server refuses undeclared fields: declare %s under status in its schema, or give status x-kubernetes-preserve-unknown-fields: true",
			gvr.GroupResource(), gvr.Version, strings.Join(missing, " and status."), strings.Join(statusDecls(missing), " and ")))
	}
}

// undeclaredStatus lists the fields the controller writes into every status
// (observedGeneration, conditions) that a parent's schema leaves undeclared; none when the
// schema keeps unknown fields or is not known.
func undeclaredStatus(s *apiextensionsv1.JSONSchemaProps) []string {
	if s == nil || kindschema.KeepsUnknown(s) || len(s.Properties) == 0 {
		return nil
	}
	status, ok := s.Properties["status"]
	if ok && (kindschema.KeepsUnknown(&status) || (len(status.Properties) == 0 && status.AdditionalProperties != nil)) {
		return nil
	}
	var out []string
	for _, f := range []string{"observedGeneration", "conditions"} {
		if _, ok := status.Properties[f]; !ok {
			out = append(out, f)
		}
	}
	return out
}

// statusDecls shows how to declare the status fields kubecel writes.
func statusDecls(fields []string) []string {
	var out []string
	for _, f := range fields {
		switch f {
		case "observedGeneration":
			out = append(out, "observedGeneration: {type: integer}")
		case "conditions":
			out = append(out, "conditions: {type: array, items: {type: object, x-kubernetes-preserve-unknown-fields: true}}")
		}
	}
	return out
}
