package compare

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubecel/kubecel/engine/plan"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// Diff compares two versions of an object after removing what the server
// maintains by itself (resourceVersion, managedFields, uid, generation, timestamps) and
// the bookkeeping of appliers (kubectl's last-applied annotation, kubecel's applied hash).
// Only the subtree under root is compared when root is set (e.g. "status"). Secret
// data and stringData values are redacted: a reader sees which keys change, not how.
func Diff(before, after *unstructured.Unstructured, root string) []plan.FieldChange {
	a, aok := comparable(before, root)
	b, bok := comparable(after, root)
	var out []plan.FieldChange
	walkDiff(root, a, b, aok, bok, &out)
	if isSecret(before) || isSecret(after) {
		for i, f := range out {
			if secretPath(f.Path) {
				out[i].Old, out[i].New = redact(f.Old), redact(f.New)
			}
		}
	}
	return out
}

// comparable returns the part of obj that a diff shows.
func comparable(obj *unstructured.Unstructured, root string) (any, bool) {
	if obj == nil {
		return nil, false
	}
	o := runtime.DeepCopyJSON(obj.Object)
	if md, ok := o["metadata"].(map[string]any); ok {
		for _, f := range []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
			delete(md, f)
		}
		if ann, ok := md["annotations"].(map[string]any); ok {
			delete(ann, "kubectl.kubernetes.io/last-applied-configuration")
			delete(ann, contract.AnnotationAppliedHash)
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
	}
	if conds, ok, _ := unstructured.NestedSlice(o, "status", "conditions"); ok {
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok {
				delete(m, "lastTransitionTime")
			}
		}
		_ = unstructured.SetNestedSlice(o, conds, "status", "conditions")
	}
	if root == "" {
		return o, true
	}
	v, ok := o[root]
	return v, ok
}

func isSecret(obj *unstructured.Unstructured) bool {
	return obj != nil && obj.GetAPIVersion() == "v1" && obj.GetKind() == "Secret"
}

func secretPath(p string) bool {
	for _, f := range []string{"data", "stringData"} {
		if p == f || strings.HasPrefix(p, f+".") || strings.HasPrefix(p, f+"[") {
			return true
		}
	}
	return false
}

func redact(v any) any {
	switch v.(type) {
	case nil:
		return nil
	case map[string]any:
		return rules.RedactSecrets(map[string]any{"apiVersion": "v1", "kind": "Secret", "data": v})["data"]
	}
	return rules.Redacted
}

// walkDiff appends the differences between a and b at path; aok and bok tell whether
// each side has the field at all.
func walkDiff(path string, a, b any, aok, bok bool, out *[]plan.FieldChange) {
	am, aMap := a.(map[string]any)
	bm, bMap := b.(map[string]any)
	al, aList := a.([]any)
	bl, bList := b.([]any)
	switch {
	case !aok && !bok:
	case aok && bok && aMap && bMap:
		keys := make([]string, 0, len(am)+len(bm))
		for k := range am {
			keys = append(keys, k)
		}
		for k := range bm {
			if _, dup := am[k]; !dup {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			av, ak := am[k]
			bv, bk := bm[k]
			walkDiff(joinField(path, k), av, bv, ak, bk, out)
		}
	case aok && bok && aList && bList:
		walkList(path, al, bl, out)
	case !aok && (bMap || bList):
		walkDiff(path, emptyLike(b), b, true, true, out)
	case !bok && (aMap || aList):
		walkDiff(path, a, emptyLike(a), true, true, out)
	case !aok:
		*out = append(*out, plan.FieldChange{Op: plan.OpAdd, Path: path, New: b})
	case !bok:
		*out = append(*out, plan.FieldChange{Op: plan.OpRemove, Path: path, Old: a})
	case !equalValues(a, b) || aMap != bMap || aList != bList:
		*out = append(*out, plan.FieldChange{Op: plan.OpChange, Path: path, Old: a, New: b})
	}
}

func emptyLike(v any) any {
	if _, ok := v.([]any); ok {
		return []any{}
	}
	return map[string]any{}
}

// walkList matches list items by a key field when every item has a distinct one
// (containers and ports by name, conditions by type), otherwise by index.
func walkList(path string, a, b []any, out *[]plan.FieldChange) {
	for _, key := range []string{"name", "type"} {
		ai, aok := indexBy(a, key)
		bi, bok := indexBy(b, key)
		if !aok || !bok {
			continue
		}
		var names []string
		for _, item := range a {
			names = append(names, item.(map[string]any)[key].(string))
		}
		for _, item := range b {
			if n := item.(map[string]any)[key].(string); ai[n] == nil {
				names = append(names, n)
			}
		}
		for _, n := range names {
			walkDiff(fmt.Sprintf("%s[%s=%s]", path, key, n), ai[n], bi[n], ai[n] != nil, bi[n] != nil, out)
		}
		return
	}
	for i := range max(len(a), len(b)) {
		var av, bv any
		if i < len(a) {
			av = a[i]
		}
		if i < len(b) {
			bv = b[i]
		}
		walkDiff(path+"["+strconv.Itoa(i)+"]", av, bv, i < len(a), i < len(b), out)
	}
}

func indexBy(items []any, key string) (map[string]map[string]any, bool) {
	idx := make(map[string]map[string]any, len(items))
	for _, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, false
		}
		k, ok := m[key].(string)
		if !ok || idx[k] != nil {
			return nil, false
		}
		idx[k] = m
	}
	return idx, true
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func joinField(path, key string) string {
	if !identifier.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}
