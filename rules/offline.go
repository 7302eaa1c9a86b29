package rules

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/rules/contract"
)

// This file evaluates rules offline, for parents and children read from files rather
// than watched (kubecel render and kubecel test): which rules take a parent, and which
// of the given objects are its children.

// Matching returns the rules whose parent is this object, and the object's resource:
// the rules of the resource its apiVersion and kind map to whose namespaces and
// selector take it. The kind maps to its resource by crds when they name it (crds may
// be nil), else by a guess, the lowercase plural of the kind (WebApp -> webapps, Policy
// -> policies), as kubectl does for unknown kinds. When no rule takes the parent, the
// error says whether rules of its resource exist but exclude it or none watch it.
func (rs *RuleSet) Matching(parent map[string]any, crds *CRDSchemas) ([]*Rule, schema.GroupResource, error) {
	apiVersion, _ := parent["apiVersion"].(string)
	kind, _ := parent["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, schema.GroupResource{}, fmt.Errorf("parent: %w", err)
	}
	gvk := gv.WithKind(kind)
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	how := "guessed from the kind; pass --crds to map it exactly"
	if r, ok := rs.definedResource(gvk); ok {
		gvr, how = r, "defined by the rules"
	} else if crds != nil {
		if r, ok := crds.ResourceFor(gvk); ok {
			gvr, how = r, "from the CRDs"
		}
	}
	namespace, name, lbls := metaOf(parent)
	var matched, sameResource []*Rule
	for _, r := range rs.Rules {
		if r.Parent.GVR != gvr {
			continue
		}
		sameResource = append(sameResource, r)
		if r.Selects(namespace, namespace != "", lbls) {
			matched = append(matched, r)
		}
	}
	switch {
	case len(matched) > 0:
		return matched, gvr.GroupResource(), nil
	case len(sameResource) > 0:
		return nil, gvr.GroupResource(), fmt.Errorf("no rule selects %s %s: rules for %s exist, but their namespaces or selector exclude it", kind, namespacedName(namespace, name), gvr.Resource)
	}
	return nil, gvr.GroupResource(), fmt.Errorf("no rule watches %s %s (resource %s, %s)", apiVersion, kind, gvr.Resource, how)
}

// EvaluateObserved is Evaluate for a parent p whose children and refs are among objs,
// objects read from files rather than watched. The objects that may be p's children are
// those labelled for it (by AnnotationParent, or by LabelParentUID unless p's UID is
// PlaceholderUID) and those with no kubecel parent at all; objects of other parents are
// left out, also as refs. A candidate belongs to the child its LabelChild names, or
// else to the desired child with its group, kind and name (and namespace, when the
// desired object sets one). Assigning one can let a waiting child evaluate and produce
// more objects, so EvaluateObserved evaluates again until no further object is
// assigned. Its Result and error are those of the last evaluation.
func (r *Rule) EvaluateObserved(ctx context.Context, parent map[string]any, p ParentRef, objs []map[string]any) (*Result, error) {
	objs = candidates(p, objs)
	assigned := make([]bool, len(objs))
	var labelled []map[string]any
	for i, obj := range objs {
		if _, _, lbls := metaOf(obj); lbls[contract.LabelChild] != "" {
			labelled = append(labelled, obj)
			assigned[i] = true
		}
	}
	observed := r.Observe(labelled)
	for {
		res, err := r.EvaluateWithRefs(ctx, parent, observed, Objects(objs))
		if err != nil {
			return res, err
		}
		progress := false
		for i, obj := range objs {
			if assigned[i] {
				continue
			}
			for _, d := range res.Children {
				if sameObject(d.Object, obj) {
					observed[d.ID] = append(observed[d.ID], obj)
					assigned[i], progress = true, true
					break
				}
			}
		}
		if !progress {
			return res, nil
		}
	}
}

// candidates picks the objects that may be p's children or refs: those labelled for it
// and those with no kubecel parent.
func candidates(p ParentRef, objs []map[string]any) []map[string]any {
	var out []map[string]any
	for _, obj := range objs {
		md, _ := obj["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		lbls, _ := md["labels"].(map[string]any)
		who, hasWho := ann[contract.AnnotationParent].(string)
		uid, hasUID := lbls[contract.LabelParentUID].(string)
		switch {
		case hasWho && who != p.Annotation():
		case hasUID && p.UID != contract.PlaceholderUID && uid != p.UID:
		default:
			out = append(out, obj)
		}
	}
	return out
}

// sameObject reports whether an observed object is the desired one: same group, kind
// and name, and the same namespace when the desired object sets one.
func sameObject(desired, obj map[string]any) bool {
	dv, _ := desired["apiVersion"].(string)
	ov, _ := obj["apiVersion"].(string)
	if desired["kind"] != obj["kind"] || groupOf(dv) != groupOf(ov) {
		return false
	}
	dns, dname, _ := metaOf(desired)
	ons, oname, _ := metaOf(obj)
	return dname == oname && (dns == "" || dns == ons)
}

// metaOf reads an object's namespace, name and string labels.
func metaOf(obj map[string]any) (namespace, name string, lbls map[string]string) {
	md, _ := obj["metadata"].(map[string]any)
	namespace, _ = md["namespace"].(string)
	name, _ = md["name"].(string)
	raw, _ := md["labels"].(map[string]any)
	lbls = make(map[string]string, len(raw))
	for k, v := range raw {
		if s, ok := v.(string); ok {
			lbls[k] = s
		}
	}
	return namespace, name, lbls
}

// namespacedName is [namespace/]name.
func namespacedName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
