package rules

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Two rules on one resource share its parents' status only when some parent can be
// selected by both. Rules that partition a resource (by namespace, or by a label whose
// values differ) cannot, so each keeps the plain Ready and Synced conditions and may use
// the same status field names. The analysis is sound but not complete: it says "may
// overlap" whenever it cannot prove otherwise (a `when` expression, NotIn against
// NotIn, ...).

// mayOverlap reports whether a parent could be selected by two rules' namespaces and
// selectors. A nil selector selects everything; an empty namespace list, every namespace
// (callers pass nil for cluster-scoped parents, where namespaces do not apply).
func mayOverlap(nsA, nsB []string, a, b labels.Selector) bool {
	if len(nsA) > 0 && len(nsB) > 0 && !slices.ContainsFunc(nsA, func(ns string) bool { return slices.Contains(nsB, ns) }) {
		return false
	}
	byKeyA, byKeyB := requirementsByKey(a), requirementsByKey(b)
	for key, reqs := range byKeyA {
		for _, rx := range reqs {
			for _, ry := range byKeyB[key] {
				if excludes(rx, ry) || excludes(ry, rx) {
					return false
				}
			}
		}
	}
	return true
}

// sourceSelector is the selector of a rule's source, or nil when it has none or it does
// not parse (its own error is reported elsewhere).
func sourceSelector(s *metav1.LabelSelector) labels.Selector {
	if s == nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return nil
	}
	return sel
}

func requirementsByKey(s labels.Selector) map[string][]labels.Requirement {
	out := map[string][]labels.Requirement{}
	if s == nil {
		return out
	}
	reqs, _ := s.Requirements()
	for _, r := range reqs {
		out[r.Key()] = append(out[r.Key()], r)
	}
	return out
}

// excludes reports whether no label value can satisfy both requirements on one key.
func excludes(x, y labels.Requirement) bool {
	xs, xFinite := allowed(x)
	switch y.Operator() {
	case selection.DoesNotExist:
		// x needs the key (a value set, or Exists).
		return xFinite || x.Operator() == selection.Exists
	case selection.NotIn, selection.NotEquals:
		return xFinite && sets.New(y.ValuesUnsorted()...).IsSuperset(xs)
	}
	ys, yFinite := allowed(y)
	return xFinite && yFinite && xs.Intersection(ys).Len() == 0
}

// allowed returns the values a requirement allows when they are a finite set.
func allowed(r labels.Requirement) (sets.Set[string], bool) {
	switch r.Operator() {
	case selection.Equals, selection.DoubleEquals, selection.In:
		return sets.New(r.ValuesUnsorted()...), true
	}
	return nil, false
}
