package celbudget

import (
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/kubecel/kubecel/rules/internal/celenv"
)

// TestBoundedExpressionsSkipTracking checks which expressions run without cost tracking,
// and that for those twice the worst-case estimate, plus the margin, bounds the actual
// cost.
func TestBoundedExpressionsSkipTracking(t *testing.T) {
	envs, err := celenv.New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ready, err := envs.Ready()
	if err != nil {
		t.Fatal(err)
	}
	k := Costs{Limit: testCostLimit, Memory: testMemory}
	parent := map[string]any{
		"metadata": map[string]any{"name": "shop", "labels": map[string]any{"a": "b"}},
		"spec":     map[string]any{"replicas": int64(3), "hosts": []any{"a", "b", "c"}, "expose": true},
	}
	tests := []struct {
		expr    string
		bounded bool
	}{
		{"parent.metadata.name", true},
		{"parent.spec.replicas * 2 + 1", true},
		{"parent.spec.?expose.orValue(false) && has(parent.metadata.labels)", true},
		{"[parent.metadata.name, parent.spec.replicas]", true},
		{"parent.metadata.name + '-web'", true},
		{"self.status.?ready.orValue(0) == parent.spec.replicas", true},
		{"parent.metadata.name + parent.metadata.name + parent.metadata.name + parent.metadata.name", false},
		{"parent.spec.hosts.map(h, h)", false},
		{"parent.metadata.labels.all(k, k != '')", false},
		// Functions whose result can be far larger than their arguments are always
		// tracked, so that what they build counts.
		{"parent.metadata.name.replace('a', parent.metadata.name)", false},
		{"parent.spec.hosts.join(parent.metadata.name)", false},
		{"parent.metadata.name.split('').size()", false},
		{"'%s'.format([parent.metadata.name])", false},
		// CEL estimates lowerAscii's cost by the length of its string (since cel-go
		// 0.31), which without a schema can be the size of a stored object.
		{"parent.metadata.name.lowerAscii()", false},
		{"parent.metadata.name.size() > 3", true},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			checked, iss := envs.Compile(ready, tt.expr)
			if iss.Err() != nil {
				t.Fatal(iss.Err())
			}
			if got := k.Bounded(ready, checked); got != tt.bounded {
				t.Errorf("bounded(%s) = %v, want %v", tt.expr, got, tt.bounded)
			}
			if !tt.bounded {
				return
			}
			est, err := ready.EstimateCost(checked, &library.CostEstimator{SizeEstimator: &sizeEstimator{worstCase: true}})
			if err != nil {
				t.Fatal(err)
			}
			prg, err := ready.Program(checked, cel.CostTracking(&library.CostEstimator{}))
			if err != nil {
				t.Fatal(err)
			}
			_, det, err := prg.Eval(map[string]any{"parent": parent, "children": map[string]any{}, "self": map[string]any{"status": map[string]any{}}})
			if err != nil {
				t.Fatal(err)
			}
			if actual := *det.ActualCost(); actual > 2*est.Max+boundMargin {
				t.Errorf("actual cost %d exceeds twice the worst-case estimate %d plus the margin", actual, est.Max)
			}
		})
	}
}

// TestCheckUsesTheParentsBounds estimates expressions over a parent whose schema bounds
// one list and leaves another unbounded: only the stated bounds can refuse one.
func TestCheckUsesTheParentsBounds(t *testing.T) {
	field := func(name string, t *apiservercel.DeclType) *apiservercel.DeclField {
		return apiservercel.NewDeclField(name, t, false, nil, nil)
	}
	spec := apiservercel.NewObjectType("object", map[string]*apiservercel.DeclField{
		"matrix": field("matrix", apiservercel.NewListType(apiservercel.StringType, 5000)),
		"hosts":  field("hosts", apiservercel.NewListType(apiservercel.StringType, -1)),
	})
	parent := apiservercel.NewObjectType("object", map[string]*apiservercel.DeclField{"spec": field("spec", spec)}).MaybeAssignTypeName("widget")
	envs, err := celenv.New(parent, nil)
	if err != nil {
		t.Fatal(err)
	}
	base, err := envs.Base()
	if err != nil {
		t.Fatal(err)
	}
	k := Costs{Limit: 100_000, Parent: parent, Memory: testMemory}
	tests := []struct {
		expr    string
		refused string
	}{
		{"parent.spec.matrix.filter(a, a.startsWith('x')).size()", ""},
		{"parent.spec.matrix.map(a, parent.spec.matrix.map(b, a + b)).size()", "exceeds the limit 100000: it iterates over too many elements"},
		// Unbounded: left to the runtime limit.
		{"parent.spec.hosts.map(a, parent.spec.hosts.map(b, a + b)).size()", ""},
	}
	for _, tt := range tests {
		checked, iss := envs.Compile(base, tt.expr)
		if iss.Err() != nil {
			t.Fatal(iss.Err())
		}
		got := k.Check(base, checked)
		if (tt.refused == "") != (got == "") || !strings.Contains(got, tt.refused) {
			t.Errorf("Check(%s) = %q, want %q", tt.expr, got, tt.refused)
		}
	}
}
