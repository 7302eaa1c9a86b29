package engine

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// needsApply decides, from the cached object, whether applying desired would change
// anything: a converged cluster must see no writes from us. An apply changes something
// when the object is missing, when a desired value differs from the live one, or when
// kubecel owns a field that desired no longer sets (the apply would remove it).
func needsApply(desired, live *unstructured.Unstructured) bool {
	if live == nil {
		return true
	}
	if !subset(desired.Object, live.Object) {
		return true
	}
	owned, ok := ownedFields(live, FieldManager, "")
	if !ok {
		return true // not ours yet: apply to take ownership of what we set
	}
	return !coversAll(owned, desired.Object)
}

// ownedFields returns the field set that manager's apply owns on obj (for the given
// subresource, "" for the main resource).
func ownedFields(obj *unstructured.Unstructured, manager, subresource string) (*fieldpath.Set, bool) {
	for _, e := range obj.GetManagedFields() {
		if e.Manager != manager || e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != subresource || e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			return nil, false
		}
		return set, true
	}
	return nil, false
}

// coversAll reports whether every field in owned is still present in desired.
func coversAll(owned *fieldpath.Set, desired map[string]any) bool {
	all := true
	owned.Iterate(func(p fieldpath.Path) {
		if all && !resolves(desired, p) {
			all = false
		}
	})
	return all
}

// resolves reports whether path p names something that exists in obj.
func resolves(obj any, p fieldpath.Path) bool {
	cur := obj
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, ok := cur.(map[string]any)
			if !ok {
				return false
			}
			if cur, ok = m[*pe.FieldName]; !ok {
				return false
			}
		case pe.Key != nil:
			next, ok := findListItem(cur, func(item any) bool {
				m, ok := item.(map[string]any)
				if !ok {
					return false
				}
				// A key field the desired item leaves out is one the server
				// defaults (a Service port's protocol): match on the others.
				for _, f := range *pe.Key {
					if v, set := m[f.Name]; set && !equalValues(v, f.Value.Unstructured()) {
						return false
					}
				}
				return true
			})
			if !ok {
				return false
			}
			cur = next
		case pe.Value != nil:
			next, ok := findListItem(cur, func(item any) bool { return equalValues(item, (*pe.Value).Unstructured()) })
			if !ok {
				return false
			}
			cur = next
		case pe.Index != nil:
			l, ok := cur.([]any)
			if !ok || *pe.Index >= len(l) {
				return false
			}
			cur = l[*pe.Index]
		}
	}
	return true
}

func findListItem(list any, match func(any) bool) (any, bool) {
	l, ok := list.([]any)
	if !ok {
		return nil, false
	}
	for _, item := range l {
		if match(item) {
			return item, true
		}
	}
	return nil, false
}

// subset reports whether every value in want is present and equal in have. Maps may
// have more keys in have (defaults, fields of other managers); lists must have the same
// length, item by item a subset (the server defaults fields inside list items too).
func subset(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok {
				if wv == nil {
					continue
				}
				return false
			}
			if !subset(wv, hv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return len(w) == 0 && have == nil
		}
		for i := range w {
			if !subset(w[i], h[i]) {
				return false
			}
		}
		return true
	default:
		return equalValues(want, have)
	}
}

// equalValues compares JSON scalars, treating integer and float forms of a number alike.
func equalValues(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	}
	return 0, false
}
