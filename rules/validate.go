package rules

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// This file checks the names, GVRs, selectors and shapes in a rules file, everything
// that does not need CEL.

var (
	childIDPattern  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	resourcePattern = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	kindPattern     = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)
)

// reservedStatusFields are written by the controller itself.
var reservedStatusFields = []string{"conditions", "observedGeneration"}

// checkRuleNames reports invalid rule names, and names used twice in the rule set: at
// the second use, naming the first; and, when the first is in another document, there
// too, naming the second, so that each document's problems name it.
func checkRuleNames(rules []*ruleSource, pieces []piece, errs *ErrorList) {
	first := map[string]*ruleSource{}
	for _, r := range rules {
		w := where{Rule: r.Name, Field: "name", Path: r.At.Key("name")}
		if r.Name == "" {
			continue // reported as required
		}
		for _, msg := range validation.IsDNS1123Label(r.Name) {
			fail(errs, w, "invalid rule name: "+msg)
		}
		other, dup := first[r.Name]
		if !dup {
			first[r.Name] = r
			continue
		}
		duplicate(errs, r, other, pieces)
		if pieces[r.piece].source != pieces[other.piece].source {
			duplicate(errs, other, r, pieces)
		}
	}
}

// duplicate reports at r that other has the same name.
func duplicate(errs *ErrorList, r, other *ruleSource, pieces []piece) {
	p := pieces[other.piece]
	fail(errs, where{Rule: r.Name, Field: "name", Path: r.At.Key("name")},
		fmt.Sprintf("duplicate rule name (also at %s); rule names must be unique across all rules files and ConfigMaps: rename one", place(p, lineOf(p, other.At.Key("name")))))
}

// checkParent validates a rule's parent and returns its GVR and selector.
func checkParent(r *ruleSource, errs *ErrorList) (schema.GroupVersionResource, labels.Selector) {
	w := where{Rule: r.Name, Field: "parent", Path: r.At.Key("parent")}
	p := r.Parent
	var gvr schema.GroupVersionResource
	if p.APIVersion != "" {
		gv, msg := parseGroupVersion(p.APIVersion)
		if msg != "" {
			fail(errs, w.Key("apiVersion"), msg)
		}
		gvr = gv.WithResource(p.Resource)
	}
	if p.Resource != "" {
		aw := w.Key("resource")
		switch {
		case strings.Contains(p.Resource, "/"):
			fail(errs, aw, "subresources are not supported; name the resource itself")
		case !resourcePattern.MatchString(p.Resource):
			guess, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Kind: p.Resource})
			fail(errs, aw, fmt.Sprintf("must be the lowercase plural resource name (such as %q), not the kind", guess.Resource))
		}
	}
	seen := map[string]bool{}
	for i, ns := range p.Namespaces {
		nw := w.Key("namespaces").Index(i)
		for _, msg := range validation.IsDNS1123Label(ns) {
			fail(errs, nw, fmt.Sprintf("invalid namespace %q: %s", ns, msg))
		}
		if seen[ns] {
			fail(errs, nw, fmt.Sprintf("duplicate namespace %q", ns))
		}
		seen[ns] = true
	}
	sel := labels.Everything()
	if p.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(p.Selector)
		if err != nil {
			fail(errs, w.Key("selector"), "invalid label selector: "+err.Error())
		} else {
			sel = s
		}
	}
	return gvr, sel
}

// parseGroupVersion validates an apiVersion: "v1" for the core group, else group/version.
func parseGroupVersion(apiVersion string) (schema.GroupVersion, string) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || gv.Version == "" {
		return gv, fmt.Sprintf("invalid apiVersion %q: use group/version, or v1 for the core group", apiVersion)
	}
	if gv.Group != "" {
		if msgs := validation.IsDNS1123Subdomain(gv.Group); len(msgs) > 0 {
			return gv, fmt.Sprintf("invalid group in apiVersion %q: %s", apiVersion, msgs[0])
		}
	}
	if len(validation.IsDNS1035Label(gv.Version)) > 0 {
		return gv, fmt.Sprintf("invalid apiVersion %q: use group/version, or v1 for the core group", apiVersion)
	}
	return gv, ""
}

// checkChildIDs reports invalid and duplicate child ids and returns the valid ones.
func checkChildIDs(r *ruleSource, errs *ErrorList) []string {
	var ids []string
	first := map[string]path{}
	for _, c := range r.Children {
		w := where{Rule: r.Name, Child: c.ID, Field: "id", Path: c.At.Key("id")}
		switch {
		case c.ID == "":
			continue // reported as required
		case !childIDPattern.MatchString(c.ID):
			fail(errs, w, "invalid child id: use letters, digits and _ and start with a letter (it is read in CEL as children.<id>)")
		case celReserved[c.ID]:
			fail(errs, w, "invalid child id: it is a CEL reserved word")
		case slices.Contains(ids, c.ID):
			fail(errs, w, "duplicate child id; ids must be unique in a rule")
			(*errs)[len(*errs)-1].first = string(first[c.ID].Key("id"))
		default:
			ids = append(ids, c.ID)
			first[c.ID] = c.At
		}
	}
	if len(r.Children) == 0 && r.Status == nil {
		fail(errs, where{Rule: r.Name, Path: r.At}, "the rule has neither children nor status, so it would do nothing")
	}
	return ids
}

// checkChildShape reports a child that does not have exactly one of template and expr.
func checkChildShape(r *ruleSource, c *childSource, errs *ErrorList) bool {
	w := where{Rule: r.Name, Child: c.ID, Path: c.At}
	switch {
	case c.HasTemplate && c.Expr != "":
		fail(errs, w, "set either template or expr, not both")
		return false
	case !c.HasTemplate && c.Expr == "":
		fail(errs, w, "set template (a manifest) or expr (CEL that returns one)")
		return false
	}
	return c.Template != nil || c.Expr != ""
}

// checkTemplateHead checks a template's apiVersion, kind and metadata, which the
// controller needs to know without evaluating anything, and returns its GVK.
func checkTemplateHead(t map[string]any, w where, errs *ErrorList) (schema.GroupVersionKind, bool) {
	ok := true
	static := func(key string) string {
		v, present := t[key]
		s, isString := v.(string)
		switch {
		case !present:
			fail(errs, w.Key(key), "required")
		case !isString || s == "":
			fail(errs, w.Key(key), "must be a non-empty string")
		case strings.Contains(s, "${"):
			fail(errs, w.Key(key), "must be a literal: the controller watches and prunes children by kind, so apiVersion and kind cannot be computed")
		default:
			return s
		}
		ok = false
		return ""
	}
	apiVersion, kind := static("apiVersion"), static("kind")
	var gvk schema.GroupVersionKind
	if apiVersion != "" {
		gv, msg := parseGroupVersion(apiVersion)
		if msg != "" {
			fail(errs, w.Key("apiVersion"), msg)
			ok = false
		}
		gvk = gv.WithKind(kind)
	}
	if kind != "" && !kindPattern.MatchString(kind) {
		fail(errs, w.Key("kind"), fmt.Sprintf("invalid kind %q", kind))
		ok = false
	}
	mw := w.Key("metadata")
	md, isMap := t["metadata"].(map[string]any)
	if !isMap {
		fail(errs, mw, "required: a map with at least name")
		return gvk, false
	}
	if name, isString := md["name"].(string); !isString || name == "" {
		fail(errs, mw.Key("name"), "required: a string, which may be a ${} expression")
		ok = false
	}
	if _, set := md["generateName"]; set {
		fail(errs, mw.Key("generateName"), "not supported: server-side apply needs a fixed name; compute one with ${} in name")
		ok = false
	}
	if _, set := md["ownerReferences"]; set {
		fail(errs, mw.Key("ownerReferences"), "reserved: the controller sets the owner reference")
		ok = false
	}
	if ns, set := md["namespace"]; set {
		if _, isString := ns.(string); !isString {
			fail(errs, mw.Key("namespace"), "must be a string, which may be a ${} expression")
			ok = false
		}
	}
	for _, field := range []string{"labels", "annotations"} {
		m, _ := md[field].(map[string]any)
		for _, key := range slices.Sorted(maps.Keys(m)) {
			if reservedMetadataKey(key) {
				fail(errs, mw.Key(field).Key(key), "reserved: the controller sets it")
				ok = false
			}
		}
	}
	return gvk, ok
}

// reservedMetadataKey reports labels and annotations that the controller writes.
func reservedMetadataKey(key string) bool {
	return strings.HasPrefix(key, "kubecel.dev/") || key == "app.kubernetes.io/managed-by"
}

// checkStatusFields reports reserved status field names.
func checkStatusFields(r *ruleSource, errs *ErrorList) {
	if r.Status == nil {
		return
	}
	w := where{Rule: r.Name, Field: "status.fields", Path: r.At.Key("status").Key("fields")}
	if len(r.Status.Fields) == 0 {
		fail(errs, w, "required: at least one field (or remove status to leave the parent's status alone)")
	}
	for _, name := range slices.Sorted(maps.Keys(r.Status.Fields)) {
		if slices.Contains(reservedStatusFields, name) {
			fail(errs, w.Key(name), "reserved: the controller writes "+strings.Join(reservedStatusFields, " and "))
		}
	}
}

// fail records a problem that has no expression.
func fail(errs *ErrorList, w where, msg string) {
	*errs = append(*errs, errorAt(w, msg))
}
