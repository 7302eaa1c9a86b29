package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestChangeText(t *testing.T) {
	deploy := ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "web"}
	parent := ObjectRef{APIVersion: "example.com/v1", Kind: "WebApp", Namespace: "ns", Name: "shop"}
	tests := []struct {
		name string
		ch   Change
		want string
	}{
		{"create", Change{Action: ActionCreate, Child: "deploy", Object: deploy,
			Fields: []FieldChange{{Op: OpAdd, Path: "spec.replicas", New: 2}}},
			"+ Deployment.apps ns/web (child deploy)\n    + spec.replicas: 2"},
		{"update", Change{Action: ActionUpdate, Child: "deploy", Object: deploy,
			Fields: []FieldChange{{Op: OpChange, Path: `metadata.labels["a/b"]`, Old: "x<y", New: "z"}}},
			`~ Deployment.apps ns/web (child deploy)` + "\n" + `    ~ metadata.labels["a/b"]: "x<y" -> "z"`},
		{"prune", Change{Action: ActionPrune, Child: "old", Object: ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Name: "c", Namespace: "ns"}},
			"- ConfigMap ns/c (child old)"},
		{"status", Change{Action: ActionStatus, Object: parent,
			Fields: []FieldChange{{Op: OpRemove, Path: "status.url", Old: "http://shop"}}},
			"~ status of WebApp.example.com ns/shop\n    - status.url: \"http://shop\""},
		{"finalizer of a cluster-scoped parent", Change{Action: ActionFinalizer, Object: ObjectRef{APIVersion: "example.com/v1", Kind: "Tenant", Name: "t"}},
			"~ finalizer of Tenant.example.com/t"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.ch.Text()); diff != "" {
				t.Errorf("Text() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
