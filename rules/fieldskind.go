package rules

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules/internal/parse"
)

// This file refuses a kind or resource that a group-version whose kinds kubecel embeds
// does not have (kind: Deployments in apps/v1): kubecel knows every kind of those
// group-versions, so such a child could never be applied, nor such a parent watched.
// Other group-versions (CRDs, or built-in ones not embedded) are left to the cluster:
// `check --kubeconfig` asks it (served.go), and the controller waits for the kind.

// embeddedIndex lists the kinds and resources of each embedded group-version.
type embeddedIndex struct {
	kinds, resources map[schema.GroupVersion][]string
}

var embeddedKinds = sync.OnceValue(func() embeddedIndex {
	x := embeddedIndex{kinds: map[schema.GroupVersion][]string{}, resources: map[schema.GroupVersion][]string{}}
	b := embedded()
	for gvk := range b.byKind {
		x.kinds[gvk.GroupVersion()] = append(x.kinds[gvk.GroupVersion()], gvk.Kind)
	}
	for gvr := range b.byResource {
		x.resources[gvr.GroupVersion()] = append(x.resources[gvr.GroupVersion()], gvr.Resource)
	}
	return x
})

// unknownKind explains why gvk cannot be a kind, or returns "" when it may be one (its
// group-version is not embedded, or has it, or the schemas of opts define it).
func unknownKind(gvk schema.GroupVersionKind, opts Options) string {
	kinds, embeddedGV := embeddedKinds().kinds[gvk.GroupVersion()]
	if !embeddedGV || slices.Contains(kinds, gvk.Kind) || opts.schemas().KindSchema(gvk) != nil {
		return ""
	}
	msg := fmt.Sprintf("%s has no kind %q", gvk.GroupVersion(), gvk.Kind)
	if hint := parse.DidYouMean(gvk.Kind, kinds); hint != "" {
		return "unknown kind" + hint + ": " + msg
	}
	var elsewhere []string
	for gv, list := range embeddedKinds().kinds {
		if slices.Contains(list, gvk.Kind) {
			elsewhere = append(elsewhere, "apiVersion: "+gv.String())
		}
	}
	if len(elsewhere) > 0 {
		slices.Sort(elsewhere)
		return fmt.Sprintf("unknown kind: %s; %s is in %s", msg, gvk.Kind, strings.Join(elsewhere, ", "))
	}
	return fmt.Sprintf("unknown kind: %s (Kubernetes %s)", msg, BuiltinKubernetesVersion())
}

// unknownResource is unknownKind for a parent's resource.
func unknownResource(gvr schema.GroupVersionResource, opts Options) string {
	resources, embeddedGV := embeddedKinds().resources[gvr.GroupVersion()]
	if !embeddedGV || slices.Contains(resources, gvr.Resource) || opts.schemas().ResourceSchema(gvr) != nil {
		return ""
	}
	msg := fmt.Sprintf("%s has no resource %q", gvr.GroupVersion(), gvr.Resource)
	if hint := parse.DidYouMean(gvr.Resource, resources); hint != "" {
		return "unknown resource" + hint + ": " + msg
	}
	return fmt.Sprintf("unknown resource: %s (Kubernetes %s; kubectl api-resources lists a cluster's)", msg, BuiltinKubernetesVersion())
}

// checkKnownKinds reports the parent, children and refs of a rule whose kind or resource
// an embedded group-version does not have. It is left out when a cluster says what it
// serves (Options.Served), which checkServed asks instead.
func checkKnownKinds(src *ruleSource, r *Rule, children []*Child, opts Options, errs *ErrorList) {
	if opts.Served != nil {
		return
	}
	if !r.Parent.GVR.Empty() && !singularOfBuiltin(r.Parent.GVR) {
		if msg := unknownResource(r.Parent.GVR, opts); msg != "" {
			fail(errs, where{Rule: src.Name, Field: "parent.resource", Path: src.At.Key("parent").Key("resource")}, msg)
		}
	}
	for _, ch := range children {
		msg := ""
		if !ch.GVK.Empty() {
			msg = unknownKind(ch.GVK, opts)
		}
		if msg == "" {
			continue
		}
		for _, cs := range src.Children {
			if cs.ID != ch.ID {
				continue
			}
			w := where{Rule: src.Name, Child: ch.ID, Field: "expr", Path: cs.At.Key("expr")}
			if cs.Template != nil {
				w.Field, w.Path = "template.kind", cs.At.Key("template").Key("kind")
			}
			fail(errs, w, msg)
		}
	}
	for _, ref := range r.Refs {
		msg := unknownKind(ref.GVK, opts)
		if msg == "" {
			continue
		}
		for _, rs := range src.Refs {
			if rs.ID == ref.ID {
				fail(errs, where{Rule: src.Name, Ref: ref.ID, Field: "kind", Path: rs.At.Key("kind")}, msg)
			}
		}
	}
}

// singularOfBuiltin reports whether gvr's resource is the kind or singular name of a
// built-in resource, which checkResourceName reports with the plural to write.
func singularOfBuiltin(gvr schema.GroupVersionResource) bool {
	for _, k := range builtinKinds {
		if k.group == gvr.Group && strings.EqualFold(k.kind, gvr.Resource) {
			return true
		}
	}
	return false
}
