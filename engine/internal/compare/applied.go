package compare

import (
	"maps"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// NeedsApply decides, from the cached object, whether applying desired (a prepared
// child, carrying its contract.AnnotationAppliedHash) would change anything: a converged cluster
// must see no writes from us.
//
// Comparing desired values with live ones is not enough. The server stores many values
// in another form than they were sent: quantities (cpu "0.5" is stored as "500m", memory
// 1024Mi as "1Gi", the number 1 as "1"), an empty Service clusterIP as the allocated
// one. Such a child would differ forever and be applied at every reconcile. So, like
// kubectl apply (its last-applied-configuration annotation) and Metacontroller, kubecel
// compares with what it last applied: every apply carries a hash of the object it sends
// in the annotation kubecel.dev/applied-hash. The annotation is written by the apply
// itself, so it costs no write, and lives on the object, so it survives a restart.
//
// An equal hash says that desired is what we applied last, not that the object still
// holds it: someone may have changed one of our fields since, and the next reconcile
// must repair that drift. The resourceVersion would tell that something changed, but it
// changes at every write, most of which leave our fields alone (the child's controller
// writing its status, another manager's label), and after each of them every normalised
// child would be applied once more. Our apply's managedFields entry tells exactly what
// is needed: an apply owns every field it sets, and any other write that changes or
// removes one of them takes that field from us (an update owns what it changes, a
// forced apply of another manager too). So while the hash is equal and our entry still
// owns every field desired sets, each of them holds what our apply stored, in the
// server's form, and the same apply would change nothing.
//
// Otherwise (no hash yet, a new desired object, a field taken by someone else) the
// values are compared as text, as before: the apply changes something when a desired
// value differs from the live one, or when kubecel owns a field that desired no longer
// sets (the apply would remove it). A difference only in the hash is not one: when the
// live values already match, nothing is written and the annotation goes on naming the
// last apply.
func NeedsApply(desired, live *unstructured.Unstructured) bool {
	if live == nil {
		return true
	}
	owned, ok := OwnedFields(live, contract.FieldManager, "")
	if !ok {
		return true // not ours yet: apply to take ownership of what we set
	}
	if hash := appliedHash(desired); hash != "" && appliedHash(live) == hash && ownsAll(owned, desired.Object) {
		return false // applied as it is, and none of our fields changed since
	}
	if !Subset(rules.WithoutAppliedHash(desired.Object), live.Object) {
		return true
	}
	return !CoversAll(owned, desired.Object)
}

// appliedHash returns obj's contract.AnnotationAppliedHash, "" when it has none.
func appliedHash(obj *unstructured.Unstructured) string {
	hash, _, _ := unstructured.NestedString(obj.Object, "metadata", "annotations", contract.AnnotationAppliedHash)
	return hash
}

// untrackedMetadata are the metadata fields that managedFields never lists: those that
// name the object and those the server maintains (apiVersion and kind are not listed
// either).
var untrackedMetadata = []string{"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "selfLink", "managedFields"}

// ownsAll reports whether owned, an apply's managedFields entry, holds every field that
// obj sets.
func ownsAll(owned *fieldpath.Set, obj map[string]any) bool {
	fields := maps.Clone(obj)
	delete(fields, "apiVersion")
	delete(fields, "kind")
	if md, ok := obj["metadata"].(map[string]any); ok {
		md = maps.Clone(md)
		for _, f := range untrackedMetadata {
			delete(md, f)
		}
		fields["metadata"] = md
		if len(md) == 0 {
			delete(fields, "metadata")
		}
	}
	for k, v := range fields {
		if !owns(owned, fieldpath.FieldNameElement(k), v) {
			return false
		}
	}
	return true
}

// owns reports whether set holds the field pe whose value is v: the field itself when it
// is a scalar, or an atomic map or list (the set lists no members of it), else each of
// its members.
func owns(set *fieldpath.Set, pe fieldpath.PathElement, v any) bool {
	switch v := v.(type) {
	case map[string]any:
		members, ok := set.Children.Get(pe)
		if !ok {
			return set.Members.Has(pe)
		}
		for k, mv := range v {
			if !owns(members, fieldpath.FieldNameElement(k), mv) {
				return false
			}
		}
		return true
	case []any:
		items, ok := set.Children.Get(pe)
		if !ok {
			return set.Members.Has(pe)
		}
		for i, item := range v {
			ipe, ok := listElement(items, i, item)
			if !ok || !owns(items, ipe, item) {
				return false
			}
		}
		return true
	default:
		return set.Members.Has(pe)
	}
}

// listElement finds the path element under which items, the field set of a list, holds
// the list's i-th item: by its key fields in a list of maps with keys, by its value in
// a set, by its index otherwise.
func listElement(items *fieldpath.Set, i int, item any) (fieldpath.PathElement, bool) {
	match := func(pe fieldpath.PathElement) bool {
		switch {
		case pe.Key != nil:
			return keyMatches(*pe.Key, item)
		case pe.Value != nil:
			return equalValues(item, (*pe.Value).Unstructured())
		case pe.Index != nil:
			return *pe.Index == i
		}
		return false
	}
	// Iterate, not All: SetNodeMap.All goes on after the loop body returns.
	var found *fieldpath.PathElement
	find := func(pe fieldpath.PathElement) {
		if found == nil && match(pe) {
			found = &pe
		}
	}
	items.Children.Iterate(find)
	items.Members.Iterate(find)
	if found == nil {
		return fieldpath.PathElement{}, false
	}
	return *found, true
}

// keyMatches reports whether a list item has the key field values of a managedFields
// path element. A key field the item leaves out is one the server defaults (a Service
// port's protocol): the others decide.
func keyMatches(key value.FieldList, item any) bool {
	m, ok := item.(map[string]any)
	if !ok {
		return false
	}
	for _, f := range key {
		if v, set := m[f.Name]; set && !equalValues(v, f.Value.Unstructured()) {
			return false
		}
	}
	return true
}

// OwnedFields returns the field set that manager's apply owns on obj (for the given
// subresource, "" for the main resource).
func OwnedFields(obj *unstructured.Unstructured, manager, subresource string) (*fieldpath.Set, bool) {
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

// CoversAll reports whether every field in owned is still present in desired.
func CoversAll(owned *fieldpath.Set, desired map[string]any) bool {
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
			next, ok := findListItem(cur, func(item any) bool { return keyMatches(*pe.Key, item) })
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

// Subset reports whether every value in want is present and equal in have. Maps may
// have more keys in have (defaults, fields of other managers); lists must have the same
// length, item by item a subset (the server defaults fields inside list items too).
func Subset(want, have any) bool {
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
			if !Subset(wv, hv) {
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
			if !Subset(w[i], h[i]) {
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
