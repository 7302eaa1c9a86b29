package rollout

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/rules/contract"
)

// parent is a parent at generation 2 with the given conditions, at revision rev of rule
// web as the rule recorded it ("" for none).
func parent(rev string, conds ...map[string]any) *unstructured.Unstructured {
	list := make([]any, len(conds))
	for i, c := range conds {
		list[i] = c
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "WebApp",
		"metadata": map[string]any{"name": "shop", "namespace": "ns", "generation": int64(2)},
		"status":   map[string]any{"conditions": list},
	}}
	if rev != "" {
		u.SetAnnotations(map[string]string{contract.RevisionAnnotation("web"): rev})
	}
	return u
}

func cond(typ, status string, gen any, msg string) map[string]any {
	return map[string]any{"type": typ, "status": status, "observedGeneration": gen, "message": msg}
}

func TestAtAndParentHealth(t *testing.T) {
	const at = "children are applied"
	tests := []struct {
		name       string
		parent     *unstructured.Unstructured
		wantAt     bool
		wantHealth string
	}{{
		name:   "healthy",
		parent: parent("h2", cond("Synced", "True", int64(2), at), cond("Ready", "True", int64(2), "all children ready")),
		wantAt: true,
	}, {
		name:   "healthy, generations read from JSON numbers",
		parent: parent("h2", cond("Synced", "True", float64(2), at), cond("Ready", "True", float64(2), "")),
		wantAt: true,
	}, {
		name:       "no conditions",
		parent:     parent("h2"),
		wantHealth: "not reconciled at revision h2 yet",
	}, {
		name:       "Synced of an older generation",
		parent:     parent("h2", cond("Synced", "True", int64(1), at), cond("Ready", "True", int64(2), "")),
		wantHealth: "not reconciled at revision h2 yet",
	}, {
		name:       "Synced without observedGeneration",
		parent:     parent("h2", map[string]any{"type": "Synced", "status": "True", "message": at}),
		wantHealth: "not reconciled at revision h2 yet",
	}, {
		name:       "Synced False",
		parent:     parent("h2", cond("Synced", "False", int64(2), "apply ConfigMap/shop: forbidden"), cond("Ready", "True", int64(2), "")),
		wantHealth: "Synced is False: apply ConfigMap/shop: forbidden",
	}, {
		name:       "at another revision",
		parent:     parent("h1", cond("Synced", "True", int64(2), at), cond("Ready", "True", int64(2), "")),
		wantHealth: "not reconciled at revision h2 yet",
	}, {
		name:       "no revision recorded",
		parent:     parent("", cond("Synced", "True", int64(2), "all children applied"), cond("Ready", "True", int64(2), "")),
		wantHealth: "not reconciled at revision h2 yet",
	}, {
		name:       "Ready False",
		parent:     parent("h2", cond("Synced", "True", int64(2), at), cond("Ready", "False", int64(2), "Deployment/shop: 1 of 3 replicas available")),
		wantAt:     true,
		wantHealth: "Ready is False: Deployment/shop: 1 of 3 replicas available",
	}, {
		name:       "Ready of an older generation",
		parent:     parent("h2", cond("Synced", "True", int64(2), at), cond("Ready", "True", int64(1), "")),
		wantAt:     true,
		wantHealth: "Ready not reported yet",
	}, {
		name:       "no Ready",
		parent:     parent("h2", cond("Synced", "True", int64(2), at)),
		wantAt:     true,
		wantHealth: "Ready not reported yet",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := At(tt.parent, "web", "Synced", "h2"); got != tt.wantAt {
				t.Errorf("At = %v, want %v", got, tt.wantAt)
			}
			if got := ParentHealth(tt.parent, "web", "Ready", "Synced", "h2"); got != tt.wantHealth {
				t.Errorf("ParentHealth = %q, want %q", got, tt.wantHealth)
			}
		})
	}
}
