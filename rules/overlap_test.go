package rules

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMayOverlap(t *testing.T) {
	sel := func(s *metav1.LabelSelector) *metav1.LabelSelector { return s }
	labelsOf := func(kv ...string) *metav1.LabelSelector {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return &metav1.LabelSelector{MatchLabels: m}
	}
	expr := func(key string, op metav1.LabelSelectorOperator, values ...string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	tests := []struct {
		name     string
		nsA, nsB []string
		a, b     *metav1.LabelSelector
		want     bool
	}{
		{name: "no selectors", want: true},
		{name: "one selector", a: labelsOf("kind", "web"), want: true},
		{name: "different values of one label", a: labelsOf("kind", "web"), b: labelsOf("kind", "db"), want: false},
		{name: "same value", a: labelsOf("kind", "web"), b: labelsOf("kind", "web", "tier", "x"), want: true},
		{name: "different labels", a: labelsOf("kind", "web"), b: labelsOf("tier", "db"), want: true},
		{name: "In sets apart", a: expr("kind", metav1.LabelSelectorOpIn, "a", "b"), b: expr("kind", metav1.LabelSelectorOpIn, "c"), want: false},
		{name: "In sets meet", a: expr("kind", metav1.LabelSelectorOpIn, "a", "b"), b: labelsOf("kind", "b"), want: true},
		{name: "NotIn covers", a: labelsOf("kind", "a"), b: expr("kind", metav1.LabelSelectorOpNotIn, "a", "z"), want: false},
		{name: "NotIn leaves one", a: expr("kind", metav1.LabelSelectorOpIn, "a", "b"), b: expr("kind", metav1.LabelSelectorOpNotIn, "a"), want: true},
		{name: "DoesNotExist against a value", a: labelsOf("kind", "a"), b: expr("kind", metav1.LabelSelectorOpDoesNotExist), want: false},
		{name: "DoesNotExist against Exists", a: expr("kind", metav1.LabelSelectorOpExists), b: expr("kind", metav1.LabelSelectorOpDoesNotExist), want: false},
		{name: "NotIn against NotIn", a: expr("kind", metav1.LabelSelectorOpNotIn, "a"), b: expr("kind", metav1.LabelSelectorOpNotIn, "b"), want: true},
		{name: "namespaces apart", nsA: []string{"a"}, nsB: []string{"b", "c"}, want: false},
		{name: "namespaces meet", nsA: []string{"a", "c"}, nsB: []string{"c"}, want: true},
		{name: "one rule in every namespace", nsA: []string{"a"}, want: true},
		{name: "namespaces meet, labels apart", nsA: []string{"a"}, nsB: []string{"a"}, a: labelsOf("k", "1"), b: sel(labelsOf("k", "2")), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mayOverlap(tt.nsA, tt.nsB, sourceSelector(tt.a), sourceSelector(tt.b)); got != tt.want {
				t.Errorf("mayOverlap = %v, want %v", got, tt.want)
			}
			if got := mayOverlap(tt.nsB, tt.nsA, sourceSelector(tt.b), sourceSelector(tt.a)); got != tt.want {
				t.Errorf("mayOverlap (swapped) = %v, want %v", got, tt.want)
			}
		})
	}
}
