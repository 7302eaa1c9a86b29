package rules

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// RefNamespaces returns the namespaces in which the engine must watch ref's kind for
// this rule: the ref's literal namespace; else, for a ref that stays in its parent's
// namespace, the rule's parent namespaces; else "" (every namespace). A cluster-scoped
// kind is watched as a whole whatever this says.
func (r *Rule) RefNamespaces(ref *Ref) []string {
	switch {
	case ref.Namespace != "":
		return []string{ref.Namespace}
	case len(r.Parent.Namespaces) > 0 && !ref.CrossNamespace:
		return slices.Clone(r.Parent.Namespaces)
	}
	return []string{""}
}

// Objects is a RefSource over objects in memory (render's input files, tests).
type Objects []map[string]any

// Get implements RefSource.
func (o Objects) Get(_ context.Context, gvk schema.GroupVersionKind, namespace, name string) (map[string]any, bool, error) {
	for _, obj := range o {
		if objectGVK(obj) == gvk && stringAt(obj, "metadata", "namespace") == namespace && stringAt(obj, "metadata", "name") == name {
			return obj, true, nil
		}
	}
	return nil, false, nil
}

// List implements RefSource.
func (o Objects) List(_ context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]map[string]any, error) {
	var out []map[string]any
	for _, obj := range o {
		if objectGVK(obj) != gvk || (namespace != "" && stringAt(obj, "metadata", "namespace") != namespace) {
			continue
		}
		md, _ := obj["metadata"].(map[string]any)
		raw, _ := md["labels"].(map[string]any)
		set := make(labels.Set, len(raw))
		for k, v := range raw {
			set[k], _ = v.(string)
		}
		if selector.Matches(set) {
			out = append(out, obj)
		}
	}
	return out, nil
}

// objectGVK reads an object's apiVersion and kind.
func objectGVK(obj map[string]any) schema.GroupVersionKind {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	return schema.FromAPIVersionAndKind(apiVersion, kind)
}

// stringAt reads a string field of nested maps; "" when absent.
func stringAt(obj map[string]any, keys ...string) string {
	var cur any = obj
	for _, k := range keys {
		m, _ := cur.(map[string]any)
		cur = m[k]
	}
	s, _ := cur.(string)
	return s
}

// DescribeRefs says, for render and plan, what each ref of the evaluation read and
// whether it was found, never what it holds: "refs.settings: ConfigMap default/app
// (found)"; a name computed from Secret data is Withheld.
func (res *Result) DescribeRefs() []string {
	out := make([]string, 0, len(res.Refs))
	for _, l := range res.Refs {
		what := l.Object()
		var line string
		switch {
		case l.Selector != nil:
			where := "every namespace"
			switch {
			case l.Namespace != "" && l.Withheld:
				where = "namespace " + Withheld
			case l.Namespace != "":
				where = "namespace " + l.Namespace
			}
			line = fmt.Sprintf("refs.%s: %s in %s matching %q (%d found)", l.Ref, l.GVK.Kind, where, l.ShownSelector(), l.Found)
		case l.Found > 0:
			line = fmt.Sprintf("refs.%s: %s (found)", l.Ref, what)
		case slices.Contains(res.MissingRefs, l.Ref):
			line = fmt.Sprintf("refs.%s: %s (missing: what reads it waits)", l.Ref, what)
		default:
			line = fmt.Sprintf("refs.%s: %s (absent; optional)", l.Ref, what)
		}
		out = append(out, line)
	}
	return out
}
